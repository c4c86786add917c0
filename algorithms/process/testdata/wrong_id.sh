#!/bin/sh
# A client that answers init, then answers an id it was never asked.
read -r line
echo '{"in_reply_to":0,"type":"init_ok","name":"wrong-id"}'
read -r line
echo '{"in_reply_to":42,"type":"ok","validity_ms":0}'
exec sleep 30
