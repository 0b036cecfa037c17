"""`aam-eval tune`: a better description for a skill, proven on prompts it never saw.

The trigger cases are split three ways (`split:train`, `split:select`, `split:test` tags, or a
fixed stratified split made and said). A proposer sees the train failures only; candidates are
linted before anything is spent on them, then ranked on the selection prompts by the whole
routing matrix (a sibling losing prompts is a veto), on every engine of the run; the best one
meets the baseline once on the test prompts, paired by prompt. It is proposed only when the
lower bound of its improvement is above 0 on every engine; otherwise the answer is "no
significant improvement", with the smallest improvement that many prompts could show.
"""
