# Bash completion for `defaults`, the command-line tool of the Defaults settings library.
#
# Install: add `source /path/to/completions/defaults.bash` to ~/.bashrc, or copy this file to
# ~/.local/share/bash-completion/completions/defaults (bash-completion then loads it on demand).
#
# Completes command names, suite names (from `defaults suites`; file paths once the word holds a
# `/`), key names (from `defaults keys --described <suite>`: stored keys and those the program's
# published schema describes), each command's options, and export's and import's file.

# Adds to COMPREPLY each line of standard input that starts with the word being completed, quoted
# for the command line (so a key with a space in it comes out as `my\ key`).
_defaults_add_lines() {
    local line
    while IFS= read -r line; do
        [[ -n $line ]] || continue
        printf -v line '%q' "$line"
        [[ $line == "$cur"* ]] && COMPREPLY+=("$line")
    done
}

_defaults_files() {
    compopt -o filenames 2>/dev/null
    local IFS=$'\n'
    COMPREPLY+=($(compgen -f -- "$cur"))
}

_defaults() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local commands='suites path keys describe read write delete reset watch edit export import help'
    COMPREPLY=()
    if ((COMP_CWORD == 1)); then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W '--help' -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        fi
        return
    fi

    # Which positional argument the cursor is on (0 is <suite>), skipping options; `--` ends them.
    local command=${COMP_WORDS[1]} suite='' all='' ended='' position=0 i word
    for ((i = 2; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        if [[ -z $ended && $word == -* ]]; then
            case $word in
            --) ended=1 ;;
            --all) all=1 ;;
            --string) ((i + 1 < COMP_CWORD)) && ((i++)) ;;
            esac
            continue
        fi
        ((position == 0)) && suite=$word
        ((position++))
    done
    [[ -z $ended && $prev == --string ]] && return  # the <text>: anything goes

    if [[ -z $ended && $cur == -* ]]; then
        local options='--help'
        case $command in
        read) options+=' --merged --origin' ;;
        keys) options+=' --described' ;;
        write) options+=' --string --force' ;;
        delete) options+=' --all' ;;
        watch) options+=' --json' ;;
        import) options+=' --replace' ;;
        esac
        COMPREPLY=($(compgen -W "$options" -- "$cur"))
        return
    fi

    case $command in
    suites) return ;;
    help)
        ((position == 0)) && COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        return
        ;;
    esac
    if ((position == 0)); then
        if [[ $cur == */* ]]; then
            _defaults_files
        else
            _defaults_add_lines < <(defaults suites 2>/dev/null)
        fi
        return
    fi
    # The suite as `defaults` will see it: without quotes or backslashes, and ~/ expanded.
    case $suite in
    \'*\' | \"*\") suite=${suite:1:${#suite}-2} ;;
    *) IFS= read suite <<<"$suite" ;;
    esac
    [[ $suite == '~/'* ]] && suite=$HOME/${suite#'~/'}
    case $command in
    read | write | describe) ((position == 1)) && _defaults_add_lines < <(defaults keys --described "$suite" 2>/dev/null) ;;
    delete) [[ -z $all ]] && _defaults_add_lines < <(defaults keys --described "$suite" 2>/dev/null) ;;
    reset | watch) _defaults_add_lines < <(defaults keys --described "$suite" 2>/dev/null) ;;
    export | import) ((position == 1)) && _defaults_files ;;
    esac
}

complete -F _defaults defaults
