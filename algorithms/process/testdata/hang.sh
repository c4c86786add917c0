#!/bin/sh
# A client that answers init, then hangs on acquire past its deadline.
read -r line
echo '{"in_reply_to":0,"type":"init_ok","name":"hang"}'
read -r line
echo "acquiring forever" >&2
exec sleep 60
