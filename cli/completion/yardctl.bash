# bash completion for yardctl (installed as /usr/share/bash-completion/completions/yardctl).
# Subcommands and flags come from yardctl's own --help, so they never fall behind the program; system names
# (after decompose, attach, detach, renew, systems, systems forget) and device ids (-d, devices release) come from
# the yardd that yardctl would talk to; flag values (-o, --p2p, --by, --affinity, ops --type/--state) are listed here, templates come from yardd.

_yardctl_help() {  # the --help text of `yardctl WORDS...`, cached for this shell
    local key="_$*"
    if [[ -z ${_yardctl_help_cache[$key]+set} ]]; then
        _yardctl_help_cache[$key]=$(yardctl "$@" --help 2>/dev/null)
    fi
    printf '%s\n' "${_yardctl_help_cache[$key]}"
}

_yardctl_subcommands() {  # the subcommands `yardctl WORDS...` takes
    _yardctl_help "$@" | awk 'tolower($0) ~ /^subcommands:/ {on=1; next} on && /^[^ ]/ {on=0} on && $1 ~ /^[a-z][a-z-]*$/ {print $1}'
}

_yardctl_flags() {
    _yardctl_help "$@" | grep -oE '(^|[ ,])--?[a-zA-Z][a-zA-Z0-9-]*' | sed -E 's/^[ ,]//' | sort -u
}

_yardctl_templates() {  # the machine templates yardd offers
    yardctl templates -o json 2>/dev/null | grep -oE '"name": *"[^"]*"' | sed -E 's/.*"([^"]*)"$/\1/'
}

_yardctl() {
    declare -gA _yardctl_help_cache 2>/dev/null || true
    # Plain COMP_WORDS: works with or without the bash-completion package's helpers.
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cword=$COMP_CWORD
    local -a words=("${COMP_WORDS[@]}")

    # The subcommand chain typed so far (yardctl ops show ...).
    local -a chain=()
    local i word subs
    for ((i = 1; i < cword; i++)); do
        word=${words[i]}
        [[ $word == -* ]] && continue
        subs=$(_yardctl_subcommands "${chain[@]}")
        grep -qx -- "$word" <<<"$subs" && chain+=("$word")
    done

    case $prev in
        -o|--output) COMPREPLY=($(compgen -W "table json csv" -- "$cur")); return ;;
        --p2p) COMPREPLY=($(compgen -W "required preferred none" -- "$cur")); return ;;
        --by) COMPREPLY=($(compgen -W "tenant system model" -- "$cur")); return ;;
        --type|--kind) [[ ${chain[0]} == ops ]] && { COMPREPLY=($(compgen -W "compose decompose attach detach" -- "$cur")); return; } ;;
        --state) [[ ${chain[0]} == ops ]] && { COMPREPLY=($(compgen -W "queued running rolling-back succeeded failed" -- "$cur")); return; } ;;
        -d|--device) COMPREPLY=($(compgen -W "$(yardctl devices -o json 2>/dev/null | grep -oE '"id": *"[^"]*"' | sed -E 's/.*"([^"]*)"$/\1/')" -- "$cur")); return ;;
        --priority) COMPREPLY=($(compgen -W "production batch spot" -- "$cur")); return ;;
        --affinity) COMPREPLY=($(compgen -W "nic:gpu=switch nic:gpu=domain nvme:gpu=switch nvme:gpu=domain" -- "$cur")); return ;;
        -t|--template) COMPREPLY=($(compgen -W "$(_yardctl_templates)" -- "$cur")); return ;;
        --ca|--cert|--key|--token-file|-f|--file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --context) COMPREPLY=($(compgen -W "$(yardctl context list -o json 2>/dev/null | grep -oE '"name": *"[^"]*"' | sed -E 's/.*"([^"]*)"$/\1/')" -- "$cur")); return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_yardctl_flags "${chain[@]}")" -- "$cur"))
        return
    fi
    local candidates
    candidates=$(_yardctl_subcommands "${chain[@]}")
    case ${chain[*]} in
        "context use"|"context delete"|"context set")
            candidates+=" $(yardctl context list -o json 2>/dev/null | grep -oE '"name": *"[^"]*"' | sed -E 's/.*"([^"]*)"$/\1/')" ;;
        "devices release")
            candidates+=" $(yardctl devices -o json 2>/dev/null | grep -oE '"id": *"[^"]*"' | sed -E 's/.*"([^"]*)"$/\1/')" ;;
        templates)
            candidates+=" $(_yardctl_templates)" ;;
        decompose|attach|detach|renew|systems|"systems forget"|"queue cancel")
            candidates+=" $(yardctl systems -o json 2>/dev/null | grep -oE '"name": *"[^"]*"' | sed -E 's/.*"([^"]*)"$/\1/')" ;;
    esac
    COMPREPLY=($(compgen -W "$candidates" -- "$cur"))
}

complete -F _yardctl yardctl
