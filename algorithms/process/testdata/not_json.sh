#!/bin/sh
# A client that answers init with a line that is not JSON (a stray debug print).
read -r line
echo "debug: got init"
exec sleep 30
