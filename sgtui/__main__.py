from sgtui.cli import main

raise SystemExit(main())
