"""Who may run what: users and tokens (`users`), and the statement policy per role (`policy`)."""
