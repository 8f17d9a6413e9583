# The demo's agent: a tiny program of our own, run by the sandbox's sidecar for every prompt
# (SANDBOX_AGENT_COMMAND, through `bash -lc`). It streams a few lines reacting to the message
# (SIDECAR_AGENT_MESSAGE) and the workspace, then a final answer. No model, no network.
msg="${SIDECAR_AGENT_MESSAGE:-}"
say() { printf '%s\n' "$*"; sleep 0.4; }
say "demo-agent: received \"$msg\" (session ${SIDECAR_AGENT_SESSION_ID:-none})"
say "demo-agent: working in $(pwd) as $(whoami)"
files=$(find . -maxdepth 1 -type f ! -name '.*' | sed 's|^\./||' | sort | tr '\n' ' ')
files="${files% }"
say "demo-agent: files here: ${files:-none}"
if [ -f notes.txt ]; then say "demo-agent: notes.txt says: $(head -c 200 notes.txt)"; fi
words=$(printf '%s' "$msg" | wc -w | tr -d ' ')
say "Final answer: your message has $words words; in capitals: $(printf '%s' "$msg" | tr '[:lower:]' '[:upper:]')"
