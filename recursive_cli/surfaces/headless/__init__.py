"""Claude Code's headless surface: `recursive -p` and the stream-json protocol of Claude's Agent SDKs.

`entry.maybe_headless` recognises the command line; `flags` reads Claude's flags; `build`
assembles the runtime through the façade (`project`: Claude Code's variables, slash commands,
plugins and output style around it); `server` runs prompts from stdin and answers the
client's control requests; `guard` is Claude's permission flow as a tool guard; `hooks` and
`channel` call the client back; `tool_names` shows our tools under Claude's names.
"""
