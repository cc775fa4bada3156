"""Where is my message: a message's journey, reconstructed from the records the key index finds (nothing kept per message)."""
