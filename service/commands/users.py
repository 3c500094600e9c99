"""`wanka user add|list` and `wanka token create`: who may use a served warehouse."""

from __future__ import annotations

import sys

import click

from service.commands.common import open_engine
from warehouse.errors import UserError
from warehouse.security import users


@click.group()
def user() -> None:
    """Users of `wanka serve` (HTTP and PostgreSQL wire) and their roles."""


@user.command("add")
@click.argument("name")
@click.option(
    "--role", required=True, type=click.Choice(users.ROLES), help="What the user may run."
)
@click.option(
    "--password-stdin", is_flag=True, help="Read the password from the first line of stdin."
)
@click.pass_context
def add(ctx: click.Context, name: str, role: str, password_stdin: bool) -> None:
    """Add user NAME (or set its role and password). Only salted verifiers are stored."""
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("password", hide_input=True, confirmation_prompt=True)
    if not password:
        raise UserError("the password is empty")
    with open_engine(ctx) as engine:
        cur = engine.cursor()
        try:
            added = users.add_user(cur, name, role, password)
        finally:
            cur.close()
    click.echo(f"user {added.name} ({added.role}) saved in {engine.path}")


@user.command("list")
@click.pass_context
def list_users(ctx: click.Context) -> None:
    """Every user and its role."""
    with open_engine(ctx) as engine:
        cur = engine.cursor()
        try:
            found = users.list_users(cur)
        finally:
            cur.close()
    for each in found:
        click.echo(f"{each.name}\t{each.role}")
    if not found:
        click.echo("no users yet: wanka user add NAME --role reader --password-stdin")


@click.group()
def token() -> None:
    """Bearer tokens for HTTP (`Authorization: Bearer ...`)."""


@token.command("create")
@click.option("--user", "name", required=True, help="The user the token acts as.")
@click.pass_context
def create(ctx: click.Context, name: str) -> None:
    """Print a new token for --user; it is shown once (only its SHA-256 is stored)."""
    with open_engine(ctx) as engine:
        cur = engine.cursor()
        try:
            made = users.create_token(cur, name)
        finally:
            cur.close()
    click.echo(made)
