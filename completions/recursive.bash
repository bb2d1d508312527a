# bash completion for recursive, generated from the CLI definition by
# `python -m recursive_cli.surfaces.cli.docgen`: do not edit.
# Install: source it, or copy it to ~/.local/share/bash-completion/completions/recursive.

# Is $1 a command path?
__recursive_is_command() {
    case "$1" in
        run|resume|tools|agents|logs|queue|stop|attach|loop|goal|chat|trust|acp|sessions|"sessions list"|"sessions show"|"sessions export"|"sessions import"|"sessions rm"|"sessions gc"|config|"config show"|"config path"|checkpoints|"checkpoints list"|"checkpoints diff"|"checkpoints restore"|mcp|"mcp list"|"mcp get"|hooks|"hooks list"|fleet|"fleet run"|"fleet status"|"fleet resume"|worktree|"worktree list"|"worktree rm"|skills|"skills list") return 0 ;;
        *) return 1 ;;
    esac
}

# REPLY = the options of command $1
__recursive_options() {
    case "$1" in
        "") REPLY="--version -p --print -h --help" ;;
        run) REPLY="--no-stdin -c --continue -i --image --output-last-message --output-schema --mcp-config --strict-mcp-config --settings --bg --include-hook-events -w --worktree --agents --agent --fallback-model -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --no-session --no-checkpoints --permission-mode --allow --deny --system-prompt --append-system-prompt --no-stream --wire -q --quiet -v --verbose --otel --script --sandbox --sandbox-network --sandbox-allow-port --trust-workspace --bare --strict-config --skill --no-skills -h --help" ;;
        resume) REPLY="--last --no-stdin -i --image --output-last-message --output-schema --mcp-config --strict-mcp-config --settings --bg --include-hook-events --agents --agent --fallback-model -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --no-session --no-checkpoints --permission-mode --allow --deny --system-prompt --append-system-prompt --no-stream --wire -q --quiet -v --verbose --otel --script --sandbox --sandbox-network --sandbox-allow-port --trust-workspace --bare --strict-config --skill --no-skills -h --help" ;;
        tools|"mcp list"|"mcp get") REPLY="--json --mcp-config --strict-mcp-config -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --no-session --no-checkpoints --permission-mode --allow --deny --system-prompt --append-system-prompt --no-stream --wire -q --quiet -v --verbose --otel --script --sandbox --sandbox-network --sandbox-allow-port --trust-workspace --bare --strict-config --skill --no-skills -h --help" ;;
        agents|"sessions list") REPLY="--json --all-workspaces -C --workspace -h --help" ;;
        logs) REPLY="-f --follow -o --output-format -h --help" ;;
        queue|attach|sessions|"sessions show"|"sessions rm"|config|checkpoints|"checkpoints diff"|mcp|hooks|fleet|worktree|skills) REPLY="-h --help" ;;
        stop) REPLY="--now -h --help" ;;
        loop) REPLY="--max-iterations --max-context-tokens --no-stdin -c --continue -i --image --output-last-message --output-schema --mcp-config --strict-mcp-config --settings --bg --include-hook-events -w --worktree --agents --agent --fallback-model -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --no-session --no-checkpoints --permission-mode --allow --deny --system-prompt --append-system-prompt --no-stream --wire -q --quiet -v --verbose --otel --script --sandbox --sandbox-network --sandbox-allow-port --trust-workspace --bare --strict-config --skill --no-skills -h --help" ;;
        goal) REPLY="--until --check --judge-model --max-turns --check-timeout --no-stdin -c --continue -i --image --output-last-message --output-schema --mcp-config --strict-mcp-config --settings --bg --include-hook-events -w --worktree --agents --agent --fallback-model -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --no-session --no-checkpoints --permission-mode --allow --deny --system-prompt --append-system-prompt --no-stream --wire -q --quiet -v --verbose --otel --script --sandbox --sandbox-network --sandbox-allow-port --trust-workspace --bare --strict-config --skill --no-skills -h --help" ;;
        chat) REPLY="-c --continue -i --image --settings -w --worktree --mcp-config --strict-mcp-config -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --no-session --no-checkpoints --permission-mode --allow --deny --system-prompt --append-system-prompt --no-stream --wire -q --quiet -v --verbose --otel --script --sandbox --sandbox-network --sandbox-allow-port --trust-workspace --bare --strict-config --skill --no-skills -h --help" ;;
        trust) REPLY="--list --revoke --json -h --help" ;;
        acp) REPLY="-m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --no-session --no-checkpoints --permission-mode --allow --deny --system-prompt --append-system-prompt --no-stream --wire -q --quiet -v --verbose --otel --script --sandbox --sandbox-network --sandbox-allow-port --trust-workspace --bare --strict-config --skill --no-skills -h --help" ;;
        "sessions export") REPLY="-f --format -o --output --bundle -h --help" ;;
        "sessions import") REPLY="-C --workspace --force -h --help" ;;
        "sessions gc") REPLY="--older-than --dry-run -y --yes --all-workspaces -C --workspace -h --help" ;;
        "config show") REPLY="--json --settings --mcp-config --strict-mcp-config -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --no-session --no-checkpoints --permission-mode --allow --deny --system-prompt --append-system-prompt --no-stream --wire -q --quiet -v --verbose --otel --script --sandbox --sandbox-network --sandbox-allow-port --trust-workspace --bare --strict-config --skill --no-skills -h --help" ;;
        "config path") REPLY="-C --workspace -h --help" ;;
        "checkpoints list"|"fleet status") REPLY="--json -h --help" ;;
        "checkpoints restore") REPLY="--turn --dry-run --force -h --help" ;;
        "hooks list") REPLY="--settings --json -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --no-session --no-checkpoints --permission-mode --allow --deny --system-prompt --append-system-prompt --no-stream --wire -q --quiet -v --verbose --otel --script --sandbox --sandbox-network --sandbox-allow-port --trust-workspace --bare --strict-config --skill --no-skills -h --help" ;;
        "fleet run") REPLY="--results --address --concurrency --retries --max-cost --memory --num-cpus -C --workspace --until --check --max-turns --judge-model --check-timeout -m --model --provider --api-base --max-steps --max-duration --permission-mode --allow --deny --sandbox --sandbox-network --system-prompt --append-system-prompt --add-dir --no-checkpoints --no-stream --script -o --output-format -q --quiet -h --help" ;;
        "fleet resume") REPLY="--address --concurrency --retries -o --output-format -q --quiet -h --help" ;;
        "worktree list") REPLY="--json -C --workspace -h --help" ;;
        "worktree rm") REPLY="--force -C --workspace -h --help" ;;
        "skills list") REPLY="--json -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --no-session --no-checkpoints --permission-mode --allow --deny --system-prompt --append-system-prompt --no-stream --wire -q --quiet -v --verbose --otel --script --sandbox --sandbox-network --sandbox-allow-port --trust-workspace --bare --strict-config --skill --no-skills -h --help" ;;
        *) REPLY="" ;;
    esac
}

# REPLY = the options of $1 that take a value
__recursive_value_options() {
    case "$1" in
        run) REPLY="-i --image --output-last-message --output-schema --mcp-config --settings -w --worktree --agents --agent --fallback-model -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --permission-mode --allow --deny --system-prompt --append-system-prompt --wire --script --sandbox --sandbox-allow-port --skill" ;;
        resume) REPLY="-i --image --output-last-message --output-schema --mcp-config --settings --agents --agent --fallback-model -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --permission-mode --allow --deny --system-prompt --append-system-prompt --wire --script --sandbox --sandbox-allow-port --skill" ;;
        tools|"mcp list"|"mcp get") REPLY="--mcp-config -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --permission-mode --allow --deny --system-prompt --append-system-prompt --wire --script --sandbox --sandbox-allow-port --skill" ;;
        agents|"sessions list"|"sessions import"|"config path"|"worktree list"|"worktree rm") REPLY="-C --workspace" ;;
        logs) REPLY="-o --output-format" ;;
        loop) REPLY="--max-iterations --max-context-tokens -i --image --output-last-message --output-schema --mcp-config --settings -w --worktree --agents --agent --fallback-model -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --permission-mode --allow --deny --system-prompt --append-system-prompt --wire --script --sandbox --sandbox-allow-port --skill" ;;
        goal) REPLY="--until --check --judge-model --max-turns --check-timeout -i --image --output-last-message --output-schema --mcp-config --settings -w --worktree --agents --agent --fallback-model -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --permission-mode --allow --deny --system-prompt --append-system-prompt --wire --script --sandbox --sandbox-allow-port --skill" ;;
        chat) REPLY="-i --image --settings -w --worktree --mcp-config -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --permission-mode --allow --deny --system-prompt --append-system-prompt --wire --script --sandbox --sandbox-allow-port --skill" ;;
        trust) REPLY="--revoke" ;;
        acp|"skills list") REPLY="-m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --permission-mode --allow --deny --system-prompt --append-system-prompt --wire --script --sandbox --sandbox-allow-port --skill" ;;
        "sessions export") REPLY="-f --format -o --output --bundle" ;;
        "sessions gc") REPLY="--older-than -C --workspace" ;;
        "config show") REPLY="--settings --mcp-config -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --permission-mode --allow --deny --system-prompt --append-system-prompt --wire --script --sandbox --sandbox-allow-port --skill" ;;
        "checkpoints restore") REPLY="--turn" ;;
        "hooks list") REPLY="--settings -m --model --provider --api-base --effort --thinking-budget -C --workspace --add-dir --max-steps --max-cost --max-duration -o --output-format --session-id --permission-mode --allow --deny --system-prompt --append-system-prompt --wire --script --sandbox --sandbox-allow-port --skill" ;;
        "fleet run") REPLY="--results --address --concurrency --retries --max-cost --memory --num-cpus -C --workspace --until --check --max-turns --judge-model --check-timeout -m --model --provider --api-base --max-steps --max-duration --permission-mode --allow --deny --sandbox --system-prompt --append-system-prompt --add-dir --script -o --output-format" ;;
        "fleet resume") REPLY="--address --concurrency --retries -o --output-format" ;;
        *) REPLY="" ;;
    esac
}

# Complete the value of option $2 of command $1.
__recursive_complete_value() {
    case "$1:$2" in
        run:-i|run:--image|run:--output-last-message|run:--output-schema|run:--script|run:--skill|resume:-i|resume:--image|resume:--output-last-message|resume:--output-schema|resume:--script|resume:--skill|tools:--script|tools:--skill|loop:-i|loop:--image|loop:--output-last-message|loop:--output-schema|loop:--script|loop:--skill|goal:-i|goal:--image|goal:--output-last-message|goal:--output-schema|goal:--script|goal:--skill|chat:-i|chat:--image|chat:--script|chat:--skill|trust:--revoke|acp:--script|acp:--skill|"sessions export":-o|"sessions export":--output|"config show":--script|"config show":--skill|"mcp list":--script|"mcp list":--skill|"mcp get":--script|"mcp get":--skill|"hooks list":--script|"hooks list":--skill|"fleet run":--results|"fleet run":--script|"skills list":--script|"skills list":--skill) __recursive_files ;;
        run:--provider|resume:--provider|tools:--provider|loop:--provider|goal:--provider|chat:--provider|acp:--provider|"config show":--provider|"mcp list":--provider|"mcp get":--provider|"hooks list":--provider|"fleet run":--provider|"skills list":--provider) __recursive_words 'openai anthropic scripted' ;;
        run:--effort|resume:--effort|tools:--effort|loop:--effort|goal:--effort|chat:--effort|acp:--effort|"config show":--effort|"mcp list":--effort|"mcp get":--effort|"hooks list":--effort|"skills list":--effort) __recursive_words 'low medium high max' ;;
        run:-C|run:--workspace|run:--add-dir|resume:-C|resume:--workspace|resume:--add-dir|tools:-C|tools:--workspace|tools:--add-dir|agents:-C|agents:--workspace|loop:-C|loop:--workspace|loop:--add-dir|goal:-C|goal:--workspace|goal:--add-dir|chat:-C|chat:--workspace|chat:--add-dir|acp:-C|acp:--workspace|acp:--add-dir|"sessions list":-C|"sessions list":--workspace|"sessions import":-C|"sessions import":--workspace|"sessions gc":-C|"sessions gc":--workspace|"config show":-C|"config show":--workspace|"config show":--add-dir|"config path":-C|"config path":--workspace|"mcp list":-C|"mcp list":--workspace|"mcp list":--add-dir|"mcp get":-C|"mcp get":--workspace|"mcp get":--add-dir|"hooks list":-C|"hooks list":--workspace|"hooks list":--add-dir|"fleet run":-C|"fleet run":--workspace|"fleet run":--add-dir|"worktree list":-C|"worktree list":--workspace|"worktree rm":-C|"worktree rm":--workspace|"skills list":-C|"skills list":--workspace|"skills list":--add-dir) __recursive_dirs ;;
        run:-o|run:--output-format|resume:-o|resume:--output-format|tools:-o|tools:--output-format|loop:-o|loop:--output-format|goal:-o|goal:--output-format|chat:-o|chat:--output-format|acp:-o|acp:--output-format|"config show":-o|"config show":--output-format|"mcp list":-o|"mcp list":--output-format|"mcp get":-o|"mcp get":--output-format|"hooks list":-o|"hooks list":--output-format|"fleet run":-o|"fleet run":--output-format|"fleet resume":-o|"fleet resume":--output-format|"skills list":-o|"skills list":--output-format) __recursive_words 'text json stream-json' ;;
        run:--permission-mode|resume:--permission-mode|tools:--permission-mode|loop:--permission-mode|goal:--permission-mode|chat:--permission-mode|acp:--permission-mode|"config show":--permission-mode|"mcp list":--permission-mode|"mcp get":--permission-mode|"hooks list":--permission-mode|"fleet run":--permission-mode|"skills list":--permission-mode) __recursive_words 'auto accept-edits read-only ask plan' ;;
        run:--wire|resume:--wire|tools:--wire|loop:--wire|goal:--wire|chat:--wire|acp:--wire|"config show":--wire|"mcp list":--wire|"mcp get":--wire|"hooks list":--wire|"skills list":--wire) __recursive_words 'responses chat' ;;
        run:--sandbox|resume:--sandbox|tools:--sandbox|loop:--sandbox|goal:--sandbox|chat:--sandbox|acp:--sandbox|"config show":--sandbox|"mcp list":--sandbox|"mcp get":--sandbox|"hooks list":--sandbox|"fleet run":--sandbox|"skills list":--sandbox) __recursive_words 'read-only workspace-write off' ;;
        logs:-o|logs:--output-format) __recursive_words 'text stream-json' ;;
        "sessions export":-f|"sessions export":--format) __recursive_words 'jsonl json md atif' ;;
    esac
}

# Complete positional argument $2 of command $1.
__recursive_complete_argument() {
    case "$1" in
        "") [[ $2 == 0 ]] && __recursive_words 'run resume tools agents logs queue stop attach loop goal chat trust acp sessions config checkpoints mcp hooks fleet worktree skills' ;;
        resume|logs|queue|stop|attach|"sessions show"|"sessions export"|"checkpoints list"|"checkpoints diff"|"checkpoints restore") case "$2" in 0) __recursive_session_ids ;; esac ;;
        trust|"fleet run"|"fleet status"|"fleet resume") case "$2" in 0) __recursive_files ;; esac ;;
        sessions) [[ $2 == 0 ]] && __recursive_words 'list show export import rm gc' ;;
        "sessions rm") case "$2" in *) __recursive_session_ids ;; esac ;;
        config) [[ $2 == 0 ]] && __recursive_words 'show path' ;;
        checkpoints) [[ $2 == 0 ]] && __recursive_words 'list diff restore' ;;
        mcp) [[ $2 == 0 ]] && __recursive_words 'list get' ;;
        hooks|skills) [[ $2 == 0 ]] && __recursive_words 'list' ;;
        fleet) [[ $2 == 0 ]] && __recursive_words 'run status resume' ;;
        worktree) [[ $2 == 0 ]] && __recursive_words 'list rm' ;;
    esac
}

__recursive_words() {
    local IFS=$' \t\n'
    COMPREPLY=($(compgen -W "$1" -- "$cur"))
}

__recursive_files() {
    local IFS=$'\n'
    compopt -o filenames 2>/dev/null
    COMPREPLY=($(compgen -f -- "$cur"))
}

__recursive_dirs() {
    local IFS=$'\n'
    compopt -o filenames 2>/dev/null
    COMPREPLY=($(compgen -d -- "$cur"))
}

__recursive_session_ids() {
    local dir ids=()
    for dir in "${RECURSIVE_HOME:-$HOME/.recursive}"/sessions/*/; do
        [[ -d $dir ]] || continue
        dir=${dir%/}
        ids+=("${dir##*/}")
    done
    __recursive_words "${ids[*]}"
}

_recursive() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local path="" nargs=0 skip=0 word i REPLY
    for (( i = 1; i < COMP_CWORD; i++ )); do
        word=${COMP_WORDS[i]}
        if (( skip )); then
            [[ $word == "=" ]] || skip=0
            continue
        fi
        if [[ $word == -* ]]; then
            __recursive_value_options "$path"
            [[ " $REPLY " == *" $word "* ]] && skip=1
        elif (( nargs == 0 )) && __recursive_is_command "${path:+$path }$word"; then
            path=${path:+$path }$word
        else
            (( nargs++ ))
        fi
    done
    COMPREPLY=()
    if [[ $prev == "=" && COMP_CWORD -gt 1 ]]; then
        prev=${COMP_WORDS[COMP_CWORD-2]}
    fi
    __recursive_value_options "$path"
    if [[ $prev == -* && " $REPLY " == *" $prev "* ]]; then
        __recursive_complete_value "$path" "$prev"
    elif [[ $cur == -* ]]; then
        __recursive_options "$path"
        __recursive_words "$REPLY"
    else
        __recursive_complete_argument "$path" "$nargs"
    fi
}

complete -F _recursive recursive
