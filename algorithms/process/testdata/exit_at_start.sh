#!/bin/sh
# A client that dies before init: its last stderr line must reach the harness's error.
echo "fatal: cannot connect to the moon" >&2
exit 3
