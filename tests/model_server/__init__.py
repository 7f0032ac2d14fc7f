"""A scripted model server: the one thing the real-agent tests fake.

The real agent CLIs (Claude Code, Codex, Gemini CLI) run their real tools, permission
checks, session files and limit handling against it; only the model's answers are
scripted. :mod:`.core` holds what every vendor shares (the script, the HTTP server, the
loopback-only network namespace); each vendor's module speaks its API.
"""
