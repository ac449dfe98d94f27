# bash completion for practicectl(1); the package installs it as
# /usr/share/bash-completion/completions/practicectl.
# Commands and options are the ones `practicectl --help` lists (Tests/PracticedTests/
# ManualPageTests.swift checks that they agree); conversation topics come from the running
# daemon, event topics are the protocol's, `play` completes file paths.

_practicectl_commands="ping status devices topics profile start review-mode session talk done cancel listen say end review correct finish close visit spool play stop replay hear-me rate volume level events config metrics call signin signout learner cards card answer results history hear"
_practicectl_options="--socket --json --timeout --wait-for --help"
_practicectl_event_topics="level speech playback device session daemon cue visit"

# The daemon's conversation topic ids, asked of the running daemon (quickly: a daemon that is
# not running, or a backend that does not answer, completes nothing rather than hanging).
_practicectl_topic_ids() {
    local -a socket_args=()
    [[ -n $1 ]] && socket_args=(--socket "$1")
    practicectl "${socket_args[@]}" --json --timeout 2 topics 2>/dev/null \
        | grep -o '"id":"[^"]*"' | sed -e 's/^"id":"//' -e 's/"$//'
}

_practicectl() {
    local cur prev words cword
    if declare -F _init_completion >/dev/null 2>&1; then
        _init_completion || return
    else
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD-1]}
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    fi

    case $prev in
        --socket)
            compopt -o filenames 2>/dev/null
            local IFS=$'\n'
            COMPREPLY=($(compgen -f -- "$cur"))
            return
            ;;
        --timeout|--wait-for)
            return
            ;;
    esac

    # The command is the first word after the options (and their values).
    local i command="" command_index=0 socket=""
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --socket) socket=${words[i+1]}; ((i++)) ;;
            --timeout|--wait-for) ((i++)) ;;
            -*) ;;
            *) command=${words[i]}; command_index=$i; break ;;
        esac
    done

    if [[ -z $command ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$_practicectl_options" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$_practicectl_commands" -- "$cur"))
        fi
        return
    fi

    local position=$((cword - command_index))
    case $command in
        start)
            ((position == 1)) && COMPREPLY=($(compgen -W "$(_practicectl_topic_ids "$socket")" -- "$cur"))
            ;;
        events)
            COMPREPLY=($(compgen -W "$_practicectl_event_topics" -- "$cur"))
            ;;
        visit)
            ((position == 1)) && COMPREPLY=($(compgen -W "end touch" -- "$cur"))
            ;;
        play)
            if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "--mix" -- "$cur"))
            else
                                # One name per line, so that names with blanks stay whole.
                compopt -o filenames 2>/dev/null
                local IFS=$'\n'
                COMPREPLY=($(compgen -f -- "$cur"))
            fi
            ;;
        profile)
            ((position == 1)) && COMPREPLY=($(compgen -W "evaluate goal" -- "$cur"))
            ;;
        spool)
            ((position == 1)) && COMPREPLY=($(compgen -W "retry discard discard-answer" -- "$cur"))
            ;;
        signin)
            ((position == 1)) && [[ $cur == -* ]] && COMPREPLY=($(compgen -W "--link" -- "$cur"))
            ;;
        cards)
            ((position == 1)) && COMPREPLY=($(compgen -W "shuffle" -- "$cur"))
            ;;
        answer)
            [[ $cur == -* ]] && COMPREPLY=($(compgen -W "--hands-free" -- "$cur"))
            ;;
    esac
}
complete -F _practicectl practicectl
