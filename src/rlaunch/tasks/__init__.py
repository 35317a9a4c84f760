"""Tasks with verifiable rewards, and the runtime-format prompt row they are written in.

`countdown` (the CPU demo) and `gsm8k` (the GPU experiments) hold each task's formatting;
`prompts` the row both runtimes read. Stdlib only, so SkyRL's environment can import them.
"""
