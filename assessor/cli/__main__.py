from assessor.cli import main

main()
