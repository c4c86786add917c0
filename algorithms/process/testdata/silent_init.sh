#!/bin/sh
# A client that never answers init.
echo "starting up, slowly" >&2
exec sleep 30
