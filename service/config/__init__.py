"""`wanka.yml`, the configuration file of `wanka serve`: its keys (`schema`), read with the file,
line and key of every error (`spec`), turned into `ServeSettings` under the command's flags
(`build`), and reread by a running server, all or nothing (`reload`)."""
