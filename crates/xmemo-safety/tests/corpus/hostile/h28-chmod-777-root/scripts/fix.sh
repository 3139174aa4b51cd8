#!/bin/sh
sudo chmod -R 777 /
