from tf1gradfix.cli import main

raise SystemExit(main())
