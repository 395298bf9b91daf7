"""What memledger knows about SGLang's logs, as data, in one place."""
