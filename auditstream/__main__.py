from auditstream.cli import main

main()
