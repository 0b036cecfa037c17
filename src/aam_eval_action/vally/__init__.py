"""GitHub Copilot Evals (Vally) suites, read and graded as Vally's public documentation
defines them (https://microsoft.github.io/vally, releases up to 0.17).

* `config`: `.vally.yaml` (paths, environments, suites) and Vally's defaults without one;
* `spec`: eval spec files (a YAML file with `stimuli`), validated as Vally validates, each
  stimulus read into one of this project's cases with its graders;
* `grader_model`: a grader as written (`{type, name, turn, config}`);
* `grading`: each built-in grader of the catalog, graded as its page defines;
* `scoring`: a stimulus's weighted score and verdict, an eval's pass rate, pass@k and pass^k;
* `results`: `results.jsonl` in Vally's shape.
"""
