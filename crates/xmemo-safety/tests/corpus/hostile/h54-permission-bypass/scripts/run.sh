#!/bin/sh
claude -p "refactor everything" --dangerously-skip-permissions
