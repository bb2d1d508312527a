"""Event sinks: the terminal renderer, the JSON outputs and (later) the session writer."""
