from aam_eval_action.main import cli

raise SystemExit(cli())
