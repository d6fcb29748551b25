from gpushim.cli import main

raise SystemExit(main())
