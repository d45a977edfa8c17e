#!/bin/bash
# usage: kvblk.sh standin|BIN: kvcount.sh counting block requests per durable write
BLOCK=1 exec "$(dirname "$0")/kvcount.sh" "$@"
