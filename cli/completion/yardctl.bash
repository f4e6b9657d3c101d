# bash completion for yardctl (installed as /usr/share/bash-completion/completions/yardctl).
# Subcommands and flags come from yardctl's own --help, so they never fall behind the program; system names
# (after decompose, attach, detach, renew, systems) come from the yardd that yardctl would talk to.

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
    _yardctl_help "$@" | grep -oE '(^|[ ,])--?[a-zA-Z][a-zA-Z-]*' | sed -E 's/^[ ,]//' | sort -u
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
        -o|--output) COMPREPLY=($(compgen -W "table json" -- "$cur")); return ;;
        --priority) COMPREPLY=($(compgen -W "production batch spot" -- "$cur")); return ;;
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
        decompose|attach|detach|renew|systems|"queue cancel")
            candidates+=" $(yardctl systems -o json 2>/dev/null | grep -oE '"name": *"[^"]*"' | sed -E 's/.*"([^"]*)"$/\1/')" ;;
    esac
    COMPREPLY=($(compgen -W "$candidates" -- "$cur"))
}

complete -F _yardctl yardctl
