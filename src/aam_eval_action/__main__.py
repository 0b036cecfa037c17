from aam_eval_action.main import main

raise SystemExit(main())
