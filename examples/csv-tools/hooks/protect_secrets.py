#!/usr/bin/env python3
"""PreToolUse hook: refuse any write to a .env file (exit 2 blocks the tool call)."""

import json
import re
import sys

event = json.load(sys.stdin)
tool_input = event.get("tool_input", {})
target = " ".join(str(tool_input.get(k, "")) for k in ("file_path", "path", "command"))
if re.search(r"(^|[\s/'\"])\.env\b", target):
    print("Blocked: writing .env files is not allowed; secrets belong in the vault.", file=sys.stderr)
    sys.exit(2)
sys.exit(0)
