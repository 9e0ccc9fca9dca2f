"""The harness hooks run at each session start, turn end and tool call (`--hook H`)."""
