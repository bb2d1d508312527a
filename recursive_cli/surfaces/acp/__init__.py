"""`recursive acp`: the agent spoken to over the Agent Client Protocol (agentclientprotocol.com)
on stdio, as editors (Zed, JetBrains, Neovim's plugins…) start it. The protocol's models and
JSON-RPC connection come from the `agent-client-protocol` package (the `[acp]` extra),
imported only by this command."""
