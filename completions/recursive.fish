# fish completion for recursive, generated from the CLI definition by
# `python -m recursive_cli.surfaces.cli.docgen`: do not edit.
# Install: copy it to ~/.config/fish/completions/recursive.fish.

function __recursive_session_ids --description 'Print the ids of the saved sessions'
    set -l home $RECURSIVE_HOME
    test -n "$home"; or set home $HOME/.recursive
    for dir in $home/sessions/*/
        string replace -r '.*/([^/]+)/$' '$1' -- $dir
    end
end

function __recursive_state --description 'Print the command path typed so far, then its count of arguments'
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l path ''
    set -l nargs 0
    set -l skip 0
    for token in $tokens
        if test $skip = 1
            set skip 0
        else if string match -q -- '-*' $token
            contains -- $token (__recursive_value_options $path); and set skip 1
        else if test $nargs = 0; and __recursive_is_command (string trim -- "$path $token")
            set path (string trim -- "$path $token")
        else
            set nargs (math $nargs + 1)
        end
    end
    printf '%s\n' $path $nargs
end

function __recursive_at --description 'True when the command path typed so far is one of the arguments'
    set -l state (__recursive_state)
    contains -- "$state[1]" $argv
end

function __recursive_arg --description 'True when completing argument FIRST[..LAST] (from 0) of PATH'
    set -l state (__recursive_state)
    test "$state[1]" = "$argv[1]"; and test $state[2] -ge $argv[2]
    and begin
        test (count $argv) -lt 3; or test $state[2] -le $argv[3]
    end
end

function __recursive_is_command --description 'True when the argument is a command path'
    switch $argv[1]
        case run resume tools agents logs queue stop attach loop goal chat trust acp sessions "sessions list" "sessions show" "sessions export" "sessions import" "sessions rm" "sessions gc" config "config show" "config path" checkpoints "checkpoints list" "checkpoints diff" "checkpoints restore" mcp "mcp list" "mcp get" hooks "hooks list" fleet "fleet run" "fleet status" "fleet resume" worktree "worktree list" "worktree rm" skills "skills list"
            return 0
    end
    return 1
end

function __recursive_value_options --description 'Print the options of PATH that take a value'
    switch $argv[1]
        case run
            printf '%s\n' -- -i --image --output-last-message --output-schema --mcp-config --settings -w --worktree --agents --agent --fallback-model -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --permission-mode --allow --deny --system-prompt --append-system-prompt --wire --script --sandbox --sandbox-allow-port --skill
        case resume
            printf '%s\n' -- -i --image --output-last-message --output-schema --mcp-config --settings --agents --agent --fallback-model -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --permission-mode --allow --deny --system-prompt --append-system-prompt --wire --script --sandbox --sandbox-allow-port --skill
        case tools "mcp list" "mcp get"
            printf '%s\n' -- --mcp-config -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --permission-mode --allow --deny --system-prompt --append-system-prompt --wire --script --sandbox --sandbox-allow-port --skill
        case agents "sessions list" "sessions import" "config path" "worktree list" "worktree rm"
            printf '%s\n' -- -C --workspace
        case logs
            printf '%s\n' -- -o --output-format
        case loop
            printf '%s\n' -- --max-iterations --max-context-tokens -i --image --output-last-message --output-schema --mcp-config --settings -w --worktree --agents --agent --fallback-model -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --permission-mode --allow --deny --system-prompt --append-system-prompt --wire --script --sandbox --sandbox-allow-port --skill
        case goal
            printf '%s\n' -- --until --check --judge-model --max-turns --check-timeout -i --image --output-last-message --output-schema --mcp-config --settings -w --worktree --agents --agent --fallback-model -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --permission-mode --allow --deny --system-prompt --append-system-prompt --wire --script --sandbox --sandbox-allow-port --skill
        case chat
            printf '%s\n' -- -i --image --settings -w --worktree --mcp-config -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --permission-mode --allow --deny --system-prompt --append-system-prompt --wire --script --sandbox --sandbox-allow-port --skill
        case trust
            printf '%s\n' -- --revoke
        case acp "skills list"
            printf '%s\n' -- -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --permission-mode --allow --deny --system-prompt --append-system-prompt --wire --script --sandbox --sandbox-allow-port --skill
        case "sessions export"
            printf '%s\n' -- -f --format -o --output --bundle
        case "sessions gc"
            printf '%s\n' -- --older-than -C --workspace
        case "config show"
            printf '%s\n' -- --settings --mcp-config -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --permission-mode --allow --deny --system-prompt --append-system-prompt --wire --script --sandbox --sandbox-allow-port --skill
        case "checkpoints restore"
            printf '%s\n' -- --turn
        case "hooks list"
            printf '%s\n' -- --settings -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --permission-mode --allow --deny --system-prompt --append-system-prompt --wire --script --sandbox --sandbox-allow-port --skill
        case "fleet run"
            printf '%s\n' -- --results --address --concurrency --retries --max-cost --memory --num-cpus -C --workspace --until --check --max-turns --judge-model --check-timeout -m --model --provider --api-base --max-steps --max-duration --permission-mode --allow --deny --sandbox --system-prompt --append-system-prompt --add-dir --script -o --output-format
        case "fleet resume"
            printf '%s\n' -- --address --concurrency --retries -o --output-format
    end
end

complete -c recursive -f
complete -c recursive -n '__recursive_arg "" 0 0' -a 'run' -d 'Run one turn of the agent on PROMPT and print the answer.'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'resume' -d 'Continue a saved session; without PROMPT an interrupted run carries on.'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'tools' -d 'List the tools the agent would get with these options (MCP servers\' too: they are started). Needs no API key.'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'agents' -d 'List the sessions running now (started with --bg, or in another terminal): pid, mode, turn, step, age, cost, last event.'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'logs' -d 'Print a detached session\'s progress from the start, as `run` prints it.'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'queue' -d 'Leave a message for a session: a running one takes it at its next turn (a loop waiting for a wakeup at once), a stopped one on `resume`. Prints the message\'s id.'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'stop' -d 'Stop a running session (status interrupted, exit 143); `recursive resume` continues it.'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'attach' -d 'Follow a detached session; each line typed is queued for it, /stop stops it, Ctrl-C detaches.'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'loop' -d 'Work autonomously: wake up when scheduled, react to finished background jobs, stop when done.'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'goal' -d 'Run turns until the goal holds: every --check passes and the judge agrees --until holds.'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'chat' -d 'Talk with the agent on this terminal: an interactive session in the workspace.'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'trust' -d 'Trust a folder\'s own configuration: its hooks (.claude/settings.json, .claude/settings.local.json, .recursive/settings.json), its .mcp.json servers, its skills (.claude/skills, .agents/skills) and the keys of its .recursive/config.toml that loosen yours take effect there, until one of those files changes. Shows what it trusts first.'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'acp' -d 'Serve an editor over the Agent Client Protocol on stdin/stdout (Zed, JetBrains, Neovim…).'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'sessions' -d 'Inspect and manage saved sessions.'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'config' -d 'Show the effective settings and the config files.'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'checkpoints' -d 'Workspace snapshots taken before and after every turn: list, diff, restore.'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'mcp' -d 'The MCP servers the agent gets tools from: check them, see their tools.'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'hooks' -d 'The command hooks in force (Claude Code\'s settings format).'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'fleet' -d 'Many goal or run tasks at once on Ray: a local Ray started in-process, or a cluster.'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'worktree' -d 'The git worktrees that -w/--worktree made, and their sessions.'
complete -c recursive -n '__recursive_arg "" 0 0' -a 'skills' -d 'The skills the agent is offered (SKILL.md folders).'
complete -c recursive -n '__recursive_arg resume 0 0' -x -a '(__recursive_session_ids)'
complete -c recursive -n '__recursive_arg logs 0 0' -x -a '(__recursive_session_ids)'
complete -c recursive -n '__recursive_arg queue 0 0' -x -a '(__recursive_session_ids)'
complete -c recursive -n '__recursive_arg stop 0 0' -x -a '(__recursive_session_ids)'
complete -c recursive -n '__recursive_arg attach 0 0' -x -a '(__recursive_session_ids)'
complete -c recursive -n '__recursive_arg trust 0 0' -r -F
complete -c recursive -n '__recursive_arg sessions 0 0' -a 'list' -d 'List the sessions of this workspace, oldest first.'
complete -c recursive -n '__recursive_arg sessions 0 0' -a 'show' -d 'Print a session\'s conversation, readable.'
complete -c recursive -n '__recursive_arg sessions 0 0' -a 'export' -d 'Write a session to stdout (or -o FILE) as jsonl, json, Markdown or an ATIF trajectory, or as a bundle to move it to another machine.'
complete -c recursive -n '__recursive_arg sessions 0 0' -a 'import' -d 'Make an exported session resumable here, its checkpoints included; prints its id.'
complete -c recursive -n '__recursive_arg sessions 0 0' -a 'rm' -d 'Delete sessions (refused while a process is using one).'
complete -c recursive -n '__recursive_arg sessions 0 0' -a 'gc' -d 'Delete this workspace\'s sessions not updated for the given time. Nothing else ever deletes one.'
complete -c recursive -n '__recursive_arg "sessions show" 0 0' -x -a '(__recursive_session_ids)'
complete -c recursive -n '__recursive_arg "sessions export" 0 0' -x -a '(__recursive_session_ids)'
complete -c recursive -n '__recursive_arg "sessions rm" 0' -x -a '(__recursive_session_ids)'
complete -c recursive -n '__recursive_arg config 0 0' -a 'show' -d 'Effective settings and where each came from (default, config file, env, flag), MCP servers (not started) and hooks too; keys masked.'
complete -c recursive -n '__recursive_arg config 0 0' -a 'path' -d 'The config files that are read, lowest precedence first, and whether they exist.'
complete -c recursive -n '__recursive_arg checkpoints 0 0' -a 'list' -d 'List a session\'s turns: time, files the session changed, prompt, and whether a restore undid them.'
complete -c recursive -n '__recursive_arg checkpoints 0 0' -a 'diff' -d 'Show what the session changed in TURN (its file edits and shell commands) as a diff.'
complete -c recursive -n '__recursive_arg checkpoints 0 0' -a 'restore' -d 'Put the workspace back as it was before turn N, and the conversation too.'
complete -c recursive -n '__recursive_arg "checkpoints list" 0 0' -x -a '(__recursive_session_ids)'
complete -c recursive -n '__recursive_arg "checkpoints diff" 0 0' -x -a '(__recursive_session_ids)'
complete -c recursive -n '__recursive_arg "checkpoints restore" 0 0' -x -a '(__recursive_session_ids)'
complete -c recursive -n '__recursive_arg mcp 0 0' -a 'list' -d 'Start each configured MCP server and show its source, status and tools (exit 1 if one failed).'
complete -c recursive -n '__recursive_arg mcp 0 0' -a 'get' -d 'Start one MCP server and show its tools with their descriptions and JSON Schemas.'
complete -c recursive -n '__recursive_arg hooks 0 0' -a 'list' -d 'Show each event\'s hooks: matcher, command, timeout and the file they come from.'
complete -c recursive -n '__recursive_arg fleet 0 0' -a 'run' -d 'Run every task of TASKS.jsonl, each as its own agent session on Ray; one line per task in DIR/results.jsonl.'
complete -c recursive -n '__recursive_arg fleet 0 0' -a 'status' -d 'Summarise a fleet\'s results folder: each task\'s outcome, steps, cost and time, and the totals.'
complete -c recursive -n '__recursive_arg fleet 0 0' -a 'resume' -d 'Run again the tasks of a fleet that did not succeed, with its tasks file and options; a task with a session continues it.'
complete -c recursive -n '__recursive_arg "fleet run" 0 0' -r -F
complete -c recursive -n '__recursive_arg "fleet status" 0 0' -r -F
complete -c recursive -n '__recursive_arg "fleet resume" 0 0' -r -F
complete -c recursive -n '__recursive_arg worktree 0 0' -a 'list' -d 'List this repository\'s worktrees made by recursive: name, branch, uncommitted files, session.'
complete -c recursive -n '__recursive_arg worktree 0 0' -a 'rm' -d 'Remove a worktree and its branch; one with uncommitted changes, or with commits HEAD lacks, only with --force (exit 1 otherwise).'
complete -c recursive -n '__recursive_arg skills 0 0' -a 'list' -d 'Show each skill: name, whether a run here offers it (and why not), where it comes from, its SKILL.md and description. Exit 1 when a SKILL.md cannot be used.'
complete -c recursive -n '__recursive_at ""' -l version -d 'Print the version and exit.'
complete -c recursive -n '__recursive_at ""' -s p -l print -d 'Claude Code\'s headless mode, as `claude -p PROMPT`: run PROMPT with Claude\'s flags (--max-turns, --allowedTools, --output-format…) and print the result; Claude\'s Agent SDKs start `recursive` this way.'
complete -c recursive -n '__recursive_at "" run resume tools agents logs queue stop attach loop goal chat trust acp sessions "sessions list" "sessions show" "sessions export" "sessions import" "sessions rm" "sessions gc" config "config show" "config path" checkpoints "checkpoints list" "checkpoints diff" "checkpoints restore" mcp "mcp list" "mcp get" hooks "hooks list" fleet "fleet run" "fleet status" "fleet resume" worktree "worktree list" "worktree rm" skills "skills list"' -s h -l help -d 'Show this message and exit.'
complete -c recursive -n '__recursive_at run resume loop goal' -l no-stdin -d 'Never read stdin, even when it is a pipe or a file (e.g. inside `while read` loops).'
complete -c recursive -n '__recursive_at run loop goal chat' -s c -l continue -d 'Continue this workspace\'s latest session, with its conversation and settings.'
complete -c recursive -n '__recursive_at run resume loop goal chat' -s i -l image -r -F -d 'An image for the model with the first prompt: PNG, JPEG, GIF or WebP (repeatable).'
complete -c recursive -n '__recursive_at run resume loop goal' -l output-last-message -r -F -d 'Also write the final answer to FILE (empty when there is none).'
complete -c recursive -n '__recursive_at run resume loop goal' -l output-schema -r -F -d 'JSON Schema the final answer must validate against; asked once more if not; structured_output in the JSON result.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat "config show" "mcp list" "mcp get"' -l mcp-config -x -d 'MCP servers in .mcp.json\'s format, a file or JSON text (repeatable); added to the workspace\'s .mcp.json and the user\'s.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat "config show" "mcp list" "mcp get"' -l strict-mcp-config -d 'Use only the servers of --mcp-config.'
complete -c recursive -n '__recursive_at run resume loop goal chat' -l settings -x -d 'Settings in Claude Code\'s format, a file or JSON text (repeatable): their hooks run with those of ~/.recursive/settings.json, .claude/settings.json and .recursive/settings.json.'
complete -c recursive -n '__recursive_at run resume loop goal' -l bg -d 'Run detached: print the session id and return at once; the session goes on alone (see `recursive agents`, `logs`, `queue`, `stop`).'
complete -c recursive -n '__recursive_at run resume loop goal' -l include-hook-events -d 'Stream-json: a hook_started and a hook_finished line for every hook run.'
complete -c recursive -n '__recursive_at run loop goal chat' -s w -l worktree -x -d 'Work in a new git worktree, .recursive/worktrees/NAME at the repository\'s root, on a new branch recursive/NAME from HEAD (NAME: the session id when not given), so parallel sessions never touch each other\'s files; see `recursive worktree`.'
complete -c recursive -n '__recursive_at run resume loop goal' -l agents -x -d 'Subagents the task tool can start, in Claude Code\'s format, JSON text or a file (repeatable): {"NAME": {"description": …, "prompt": …, "tools": [...], "model": …}}; with the workspace\'s .claude/agents/*.md (once trusted) and ~/.recursive/agents/*.md.'
complete -c recursive -n '__recursive_at run resume loop goal' -l agent -x -d 'Run the main conversation as agent NAME: its prompt as the system prompt, its tools, its model.'
complete -c recursive -n '__recursive_at run resume loop goal' -l fallback-model -x -d 'When the model stays unavailable through every retry (429, 5xx, overloaded, timeouts), send the call to the next of these models, and the calls after it too; priced on it, in the result\'s modelUsage.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -s m -l model -x -d 'Model name (default: the provider\'s; with another server\'s --api-base, the one model it serves).'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -l provider -x -a 'openai anthropic scripted' -d 'openai (any compatible server), anthropic or scripted.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "fleet run" "skills list"' -l api-base -x -d 'Base URL of the API, e.g. http://127.0.0.1:11434/v1.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -l effort -x -a 'low medium high max' -d 'How hard the model reasons: low, medium, high or max (Anthropic: adaptive thinking at that effort).'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -l thinking-budget -x -d 'Tokens the model may think before it answers (Anthropic extended thinking), 1024 or more.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -s C -l workspace -x -a '(__fish_complete_directories (commandline -ct))' -d 'Root the tools work in (default: current directory).'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "fleet run" "skills list"' -l add-dir -x -a '(__fish_complete_directories (commandline -ct))' -d 'Another root the file tools may use (repeatable).'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "fleet run" "skills list"' -l max-steps -x -d 'LLM calls per turn, 1 or more (default 100).'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -l max-cost -x -d 'USD for the whole session, e.g. 0.50.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -l max-duration -x -d 'Wall clock, e.g. 90s, 20m, 2h.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -s o -l output-format -x -a 'text json stream-json' -d 'text, json or stream-json.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -l session-id -x -d 'Id for the new session.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -l no-session -d 'Keep nothing on disk.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "fleet run" "skills list"' -l no-checkpoints -d 'No workspace snapshots.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -l permission-mode -x -a 'auto accept-edits read-only ask plan' -d 'auto, accept-edits, read-only, ask or plan.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "fleet run" "skills list"' -l allow -x -d 'Allow rule like \'run_shell(git *)\' (repeatable).'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "fleet run" "skills list"' -l deny -x -d 'Deny rule like \'write_file(secrets/**)\' (repeatable); deny wins.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "fleet run" "skills list"' -l system-prompt -x -d 'Replace the built-in system prompt.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "fleet run" "skills list"' -l append-system-prompt -x -d 'Extend the system prompt.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "fleet run" "skills list"' -l no-stream -d 'Ask the provider for whole responses.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -l wire -x -a 'responses chat' -d 'The openai provider\'s API: responses (OpenAI\'s Responses API) or chat (Chat Completions); default: responses for api.openai.com, chat for any other server.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -s q -l quiet -d 'Less on stderr.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -s v -l verbose -d 'More on stderr.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -l otel -d 'Export a trace of the run (a span per turn, model call and tool call) and token and cost metrics over OTLP/HTTP to $OTEL_EXPORTER_OTLP_ENDPOINT (needs the otel extra; see docs/telemetry.md).'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "fleet run" "skills list"' -l script -r -F -d 'Replies for the scripted provider (JSON).'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -l sandbox -x -a 'read-only workspace-write off' -d 'What the agent\'s commands may write: read-only, workspace-write or off (default: read-only in read-only mode, else workspace-write).'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -l sandbox-network -d 'Let the agent\'s commands reach the network (loopback included).'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -l sandbox-allow-port -x -d 'Without the network, let the agent\'s commands connect to this port on 127.0.0.1 (a local test database; repeatable).'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -l trust-workspace -d 'Let this workspace\'s own hooks, MCP servers, skills and config take effect for this run (see `recursive trust`).'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -l bare -d 'A hermetic run: no user or workspace config, hooks, MCP servers, skills, memory or context files but those given by flags.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -l strict-config -d 'Fail on an unknown key in a config file.'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -l skill -r -F -d 'Offer the skill in DIR (a folder with a SKILL.md), or every skill in DIR\'s subfolders, besides ~/.recursive/skills and the workspace\'s .claude/skills and .agents/skills (repeatable).'
complete -c recursive -n '__recursive_at run resume tools loop goal chat acp "config show" "mcp list" "mcp get" "hooks list" "skills list"' -l no-skills -d 'Offer the model no skill at all.'
complete -c recursive -n '__recursive_at resume' -l last -d 'This workspace\'s latest session; all words are the prompt.'
complete -c recursive -n '__recursive_at tools agents "sessions list" "checkpoints list" "mcp list" "hooks list" "worktree list" "skills list"' -l json -d 'Machine-readable list.'
complete -c recursive -n '__recursive_at agents' -l all-workspaces -d 'Running sessions of every workspace.'
complete -c recursive -n '__recursive_at agents' -s C -l workspace -x -a '(__fish_complete_directories (commandline -ct))' -d 'Workspace whose running sessions to list.'
complete -c recursive -n '__recursive_at logs' -s f -l follow -d 'Keep following while the session runs; exit with its exit code when it ends.'
complete -c recursive -n '__recursive_at logs' -s o -l output-format -x -a 'text stream-json' -d 'text (progress, then the answer, as `run` prints them) or stream-json.'
complete -c recursive -n '__recursive_at stop' -l now -d 'At once, killing the running tool commands, instead of at the next step boundary.'
complete -c recursive -n '__recursive_at loop' -l max-iterations -x -d 'Turns for the whole loop, 1 or more.'
complete -c recursive -n '__recursive_at loop' -l max-context-tokens -x -d 'Compact the conversation as it nears this many tokens, 1000 or more (default: the model\'s context window).'
complete -c recursive -n '__recursive_at goal' -l until -x -d 'Condition a judge model must agree holds after a turn.'
complete -c recursive -n '__recursive_at goal' -l check -x -d 'Shell command that must exit 0 after a turn (repeatable).'
complete -c recursive -n '__recursive_at goal' -l judge-model -x -d 'Model for the judge (default: the run\'s model).'
complete -c recursive -n '__recursive_at goal' -l max-turns -x -d 'Give up after this many turns, 1 or more (exit 4).'
complete -c recursive -n '__recursive_at goal "fleet run"' -l check-timeout -x -d 'Kill a check after this long, e.g. 90, 90s, 5m.'
complete -c recursive -n '__recursive_at trust' -l list -d 'List the trusted folders and whether each is still as you trusted it.'
complete -c recursive -n '__recursive_at trust' -l revoke -r -F -d 'Trust DIR no longer.'
complete -c recursive -n '__recursive_at trust' -l json -d 'Machine-readable list (with --list).'
complete -c recursive -n '__recursive_at "sessions list"' -l all-workspaces -d 'Sessions of every workspace.'
complete -c recursive -n '__recursive_at "sessions list"' -s C -l workspace -x -a '(__fish_complete_directories (commandline -ct))' -d 'Workspace whose sessions to list.'
complete -c recursive -n '__recursive_at "sessions export"' -s f -l format -x -a 'jsonl json md atif' -d 'jsonl (the transcript as stored; the default), json, md, or atif (an Agent Trajectory Interchange Format document, as Harbor reads).'
complete -c recursive -n '__recursive_at "sessions export"' -s o -l output -r -F -d 'Write to FILE instead of stdout.'
complete -c recursive -n '__recursive_at "sessions export"' -l bundle -x -d 'Write the whole session instead, checkpoints included, as one file for `sessions import` (- for stdout).'
complete -c recursive -n '__recursive_at "sessions import"' -s C -l workspace -x -a '(__fish_complete_directories (commandline -ct))' -d 'Bind the session to this workspace (default: the current folder, never the one the bundle names).'
complete -c recursive -n '__recursive_at "sessions import"' -l force -d 'Replace a session with the same id.'
complete -c recursive -n '__recursive_at "sessions gc"' -l older-than -x -d 'Age by last update, with a unit: 30d, 12h, 90m, 45s.'
complete -c recursive -n '__recursive_at "sessions gc"' -l dry-run -d 'Only list what would be removed.'
complete -c recursive -n '__recursive_at "sessions gc"' -s y -l yes -d 'Delete without asking; needed when stdin is not a terminal.'
complete -c recursive -n '__recursive_at "sessions gc"' -l all-workspaces -d 'Sessions of every workspace, not only this one.'
complete -c recursive -n '__recursive_at "sessions gc"' -s C -l workspace -x -a '(__fish_complete_directories (commandline -ct))' -d 'Workspace whose sessions to remove.'
complete -c recursive -n '__recursive_at "config show"' -l json -d 'Machine-readable settings.'
complete -c recursive -n '__recursive_at "config show"' -l settings -x -d 'More settings in Claude Code\'s format, a file or JSON text (repeatable): their hooks are listed too.'
complete -c recursive -n '__recursive_at "config path"' -s C -l workspace -x -a '(__fish_complete_directories (commandline -ct))' -d 'Workspace whose project config to show.'
complete -c recursive -n '__recursive_at "checkpoints restore"' -l turn -x -d 'Go back to before this turn.'
complete -c recursive -n '__recursive_at "checkpoints restore"' -l dry-run -d 'Print the plan; change nothing.'
complete -c recursive -n '__recursive_at "checkpoints restore"' -l force -d 'Overwrite files someone else changed, or may have changed, since the session wrote them.'
complete -c recursive -n '__recursive_at "mcp get"' -l json -d 'Machine-readable server and tools.'
complete -c recursive -n '__recursive_at "hooks list"' -l settings -x -d 'More settings in Claude Code\'s format, a file or JSON text (repeatable).'
complete -c recursive -n '__recursive_at "fleet run"' -l results -r -F -d 'Folder for results.jsonl, session bundles and logs (default: ./fleet-DATE-TIME).'
complete -c recursive -n '__recursive_at "fleet run" "fleet resume"' -l address -x -d 'Ray to use: auto, ray://HOST:10001, or a cluster\'s address (default: RAY_ADDRESS, else a local Ray started in this process).'
complete -c recursive -n '__recursive_at "fleet run" "fleet resume"' -l concurrency -x -d 'Tasks in flight at once, 1 or more (default: as many as the cluster has CPUs for).'
complete -c recursive -n '__recursive_at "fleet run"' -l retries -x -d 'Retries of a task whose process or worker died, 0 or more; a retry resumes its session.'
complete -c recursive -n '__recursive_at "fleet run"' -l max-cost -x -d 'USD for the whole fleet: no task starts once it is spent; each task\'s session is capped at what is left.'
complete -c recursive -n '__recursive_at "fleet run"' -l memory -x -d 'Memory each task asks Ray for, e.g. 2G, 512Mi.'
complete -c recursive -n '__recursive_at "fleet run"' -l num-cpus -x -d 'CPUs each task asks Ray for (default 1).'
complete -c recursive -n '__recursive_at "fleet run"' -s C -l workspace -x -a '(__fish_complete_directories (commandline -ct))' -d 'Workspace of the tasks that name none (default: current directory).'
complete -c recursive -n '__recursive_at "fleet run"' -l until -x -d 'Condition a judge must agree holds, for tasks that set none.'
complete -c recursive -n '__recursive_at "fleet run"' -l check -x -d 'Shell command that must exit 0 after a turn (repeatable), for tasks that set none.'
complete -c recursive -n '__recursive_at "fleet run"' -l max-turns -x -d 'Turns a goal task gets, 1 or more (default 10).'
complete -c recursive -n '__recursive_at "fleet run"' -l judge-model -x -d 'Model for the judge (default: the task\'s model).'
complete -c recursive -n '__recursive_at "fleet run"' -s m -l model -x -d 'Model name (default: the provider\'s).'
complete -c recursive -n '__recursive_at "fleet run"' -l provider -x -a 'openai anthropic scripted' -d 'openai, anthropic or scripted.'
complete -c recursive -n '__recursive_at "fleet run"' -l max-duration -x -d 'Wall clock of each task, e.g. 90s, 20m, 2h.'
complete -c recursive -n '__recursive_at "fleet run"' -l permission-mode -x -a 'auto accept-edits read-only ask plan' -d 'auto, accept-edits, read-only, plan (each task\'s answer is its plan) or ask (ask denies: tasks run headless).'
complete -c recursive -n '__recursive_at "fleet run"' -l sandbox -x -a 'read-only workspace-write off' -d 'What the tasks\' commands may write: read-only, workspace-write or off (default: by the permission mode).'
complete -c recursive -n '__recursive_at "fleet run"' -l sandbox-network -d 'Let the tasks\' commands reach the network.'
complete -c recursive -n '__recursive_at "fleet run" "fleet resume"' -s o -l output-format -x -a 'text json stream-json' -d 'text (results folder on stdout), json (the summary) or stream-json (a line per task event).'
complete -c recursive -n '__recursive_at "fleet run" "fleet resume"' -s q -l quiet -d 'No progress and no summary table on stderr.'
complete -c recursive -n '__recursive_at "fleet status"' -l json -d 'Machine-readable summary.'
complete -c recursive -n '__recursive_at "fleet resume"' -l retries -x -d 'Retries of a task whose process or worker died (default: the fleet\'s).'
complete -c recursive -n '__recursive_at "worktree list" "worktree rm"' -s C -l workspace -x -a '(__fish_complete_directories (commandline -ct))' -d 'A folder of the repository (default: the current one).'
complete -c recursive -n '__recursive_at "worktree rm"' -l force -d 'Delete it even with uncommitted changes or commits no other branch has.'
