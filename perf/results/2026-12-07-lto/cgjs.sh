#!/bin/bash
# usage: cgjs.sh BIN OUT [N]: cg.sh counting jetbench js-pub-sync publishes instead of KV puts
CLIENT=js exec "$(dirname "$0")/cg.sh" "$@"
