"""Sans-IO protocol logic: pure functions and small state machines, no awaits, no sockets."""
