/**
 * `ferry completion bash|zsh|fish`: a completion script for the shell, made from the commands' help texts
 * (each lists every flag it takes), so it names the commands and flags this build has.
 */

/** Each command's flags (`--config`…), read from its help text: words of letters and dashes only. */
export function commandFlags(help: Record<string, string>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [command, text] of Object.entries(help))
    out[command] = [...new Set(text.match(/--[a-z][a-z-]*/g) ?? [])].sort();
  return out;
}

const word = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, '');

function bash(flags: Record<string, string[]>): string {
  const commands = Object.keys(flags).map(word).join(' ');
  const cases = Object.entries(flags)
    .map(([c, f]) => `    ${word(c)}) opts="${f.join(' ')} --help" ;;`)
    .join('\n');
  return `# ferry completion for bash: source <(ferry completion bash)
_ferry() {
  local cur=\${COMP_WORDS[COMP_CWORD]} opts
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "${commands} help --help --version" -- "$cur"))
    return
  fi
  case "\${COMP_WORDS[1]}" in
${cases}
    help) opts="${commands}" ;;
    *) opts="" ;;
  esac
  if [[ "$cur" == -* || "\${COMP_WORDS[1]}" == help ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -F _ferry ferry
`;
}

function zsh(flags: Record<string, string[]>): string {
  const commands = Object.keys(flags).map(word).join(' ');
  const cases = Object.entries(flags)
    .map(([c, f]) => `    ${word(c)}) _values 'flag' ${f.map((x) => `'${x}'`).join(' ')} '--help' ;;`)
    .join('\n');
  return `#compdef ferry
# ferry completion for zsh: ferry completion zsh > "\${fpath[1]}/_ferry"
_ferry() {
  if (( CURRENT == 2 )); then
    _values 'command' ${commands} help
    return
  fi
  if [[ "$words[CURRENT]" != -* ]]; then
    _files
    return
  fi
  case "$words[2]" in
${cases}
  esac
}
compdef _ferry ferry
`;
}

function fish(flags: Record<string, string[]>): string {
  const commands = Object.keys(flags).map(word);
  const lines = [
    '# ferry completion for fish: ferry completion fish > ~/.config/fish/completions/ferry.fish',
    `complete -c ferry -f -n '__fish_use_subcommand' -a '${commands.join(' ')} help'`,
  ];
  for (const [c, f] of Object.entries(flags))
    for (const flag of f)
      lines.push(`complete -c ferry -n '__fish_seen_subcommand_from ${word(c)}' -l ${flag.slice(2)}`);
  return `${lines.join('\n')}\n`;
}

export const SHELLS = ['bash', 'zsh', 'fish'] as const;

export function completionScript(shell: (typeof SHELLS)[number], help: Record<string, string>): string {
  const flags = commandFlags(help);
  return shell === 'bash' ? bash(flags) : shell === 'zsh' ? zsh(flags) : fish(flags);
}
