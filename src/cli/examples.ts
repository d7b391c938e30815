/** Examples appended to `ath <command> --help` (loaded only when help is asked for). */

export const EXAMPLES: Record<string, string[]> = {
  ath: [
    "ath config init",
    "ath config set-gateway local http://127.0.0.1:8787",
    "ath discover",
    "ath register --provider github --scopes repo,read:user",
    "ath authorize --provider github --wait",
    "ath proxy github GET /user",
  ],
  discover: ["ath discover -g http://127.0.0.1:8787", "ath discover --format json", "ath discover --mode native --service https://app.example"],
  register: [
    "ath register --provider github --scopes repo,read:user",
    "ath register --provider github,gitlab            # all scopes each offers",
    "ath register --request github:repo --request gmail:mail.read --purpose 'triage issues'",
  ],
  authorize: [
    "ath authorize --provider github --wait           # browser, loopback redirect, token saved",
    "ath authorize --provider github --scopes repo --no-wait --format json",
    "ath authorize --provider github --wait --no-open --timeout 120",
  ],
  token: ["ath token --code ath_code_…                  # uses the pending session", "ath token --code ath_code_… --session ath_sess_…"],
  proxy: [
    "ath proxy github GET /user",
    "ath proxy github GET '/repos/o/r/issues?state=open' --format json",
    "ath proxy github POST /repos/o/r/issues --body '{\"title\":\"hi\"}' -H 'X-Trace: 1'",
  ],
  revoke: ["ath revoke --provider github", "ath revoke --all"],
  mcp: ["ath mcp                                     # the default gateway", "ath mcp -g https://gw.example", "claude mcp add ath -- ath mcp -g https://gw.example"],
  status: ["ath status", "ath status --format json", "ath status -g local --show-secrets"],
  identity: ["ath identity", "ath identity --agent-id https://agent.example/id --format json > id.json"],
  config: ["ath config init -g http://127.0.0.1:8787", "ath config show", "ath config use staging"],
  "config init": ["ath config init", "ath config init -g https://gw.example --agent-id https://agent.example/id"],
  "config set": ["ath config set agent-id https://agent.example/id", "ath config set key-path ~/.keys/agent.pem", "ath config set developer-name 'Acme'"],
  "config set-gateway": ["ath config set-gateway local http://127.0.0.1:8787"],
  "config use": ["ath config use local"],
  "config unset": ["ath config unset agent-id", "ath config unset gateway staging"],
  completion: [
    "ath completion bash > ~/.local/share/bash-completion/completions/ath",
    "ath completion zsh > \"${fpath[1]}/_ath\"        # or: source <(ath completion zsh) in ~/.zshrc",
    "ath completion fish > ~/.config/fish/completions/ath.fish",
  ],
};
