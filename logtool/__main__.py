from logtool.cli import main

main()
