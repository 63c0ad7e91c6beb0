"""What the commands share: their options, the checks with a progress display, how a command fails, and
what the writing commands have in common. Not commands themselves: `cli` lists every module of
`logtool.commands` but this package as a command."""
