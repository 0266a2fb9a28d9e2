//! Custom slash commands for `lua/lathe/commands.lua` (docs/commands.md):
//! `lathe.core.commands()` lists the command files of the project and the
//! user, `lathe.core.run_command(name, args [, opts])` starts the turn of
//! one (its `allowed-tools` allowed for that turn, its `model` answering
//! it), `lathe.core.expand_command(text, args)` fills `$ARGUMENTS` and
//! `$1`…`$9` of a `setup{ commands }` text. The files are read on each call.

use mlua::{Lua, Table, Value};

use super::exports::{ask_extras, fail, session, string_arg};
use lathe_core::agent::TurnExtras;
use lathe_core::commands::{self, CommandFile};
use lathe_core::permissions::RuleBase;

/// Adds the functions to the exports table `t`.
pub fn register(lua: &Lua, t: &Table) -> mlua::Result<()> {
    t.set("commands", lua.create_function(list)?)?;
    t.set("run_command", lua.create_function(run)?)?;
    t.set("expand_command", lua.create_function(expand)?)?;
    Ok(())
}

/// The project root and the home directory commands are found under.
fn roots() -> mlua::Result<(std::path::PathBuf, Option<std::path::PathBuf>)> {
    let s = session()?;
    Ok((s.config().cwd.clone(), dirs::home_dir()))
}

fn files() -> mlua::Result<(Vec<CommandFile>, RuleBase)> {
    let (root, home) = roots()?;
    let files = commands::discover(&root, home.as_deref());
    Ok((files, RuleBase::at_root(&root, home.as_deref())))
}

/// `commands()` → `{ { name, description, argument_hint, origin, scope,
/// path, allowed_tools, model, problem } }`, sorted, the project's first:
/// every command file; `problem` says why one cannot run (it is listed all
/// the same, so `/help` shows it).
fn list(lua: &Lua, (): ()) -> mlua::Result<Table> {
    let (files, base) = files()?;
    let out = lua.create_table()?;
    for f in files {
        let t = lua.create_table()?;
        t.set("name", f.name.as_str())?;
        t.set("origin", f.origin())?;
        t.set("scope", f.scope.as_str())?;
        t.set("path", f.path.display().to_string())?;
        match commands::load(&f).and_then(|c| c.rules(&base).map(|_| c)) {
            Ok(c) => {
                t.set("description", c.description())?;
                t.set("argument_hint", c.front.argument_hint.clone())?;
                t.set("allowed_tools", c.front.allowed_tools.clone())?;
                t.set("model", c.front.model.clone())?;
            }
            Err(e) => {
                t.set("description", "")?;
                t.set("problem", e.0)?;
            }
        }
        out.push(t)?;
    }
    Ok(out)
}

/// `run_command(name, args [, opts])`: starts the turn of command file
/// `/name` with `args` (`opts` as `ask()`'s: `range`). Returns nil when no
/// command file has that name, else `{ name, scope, path, allowed_tools,
/// model, prompt }` once the turn started. Errors: a malformed file, an
/// `allowed-tools` rule that does not parse, an ambiguous name, and
/// `ask()`'s (a turn running, an `@path` that cannot be attached).
fn run(lua: &Lua, (name, args, opts): (Value, Value, Value)) -> mlua::Result<Option<Table>> {
    let name = string_arg("run_command", "name", name)?;
    let args = match args {
        Value::Nil => String::new(),
        other => string_arg("run_command", "args", other)?,
    };
    let (files, base) = files()?;
    let file = match commands::resolve(&files, &name) {
        Ok(Some(f)) => f,
        Ok(None) => return Ok(None),
        Err(e) => return fail(e.0),
    };
    let command = commands::load(&file).or_else(|e| fail(e.0))?;
    let allow = command.rules(&base).or_else(|e| fail(e.0))?;
    let prompt = commands::expand(&command.body, &args);
    let (root, home) = roots()?;
    let (typed, sent_as) = commands::shown(&file, &name, &args, &prompt, &root, home.as_deref());
    let extras = TurnExtras {
        command: Some(file.name.clone()),
        allow,
        model: command.front.model.clone(),
        typed: Some(typed),
        sent_as: Some(sent_as),
    };
    ask_extras(lua, &prompt, opts, extras)?;
    let t = lua.create_table()?;
    t.set("name", file.name.as_str())?;
    t.set("scope", file.scope.as_str())?;
    t.set("path", file.path.display().to_string())?;
    t.set("allowed_tools", command.front.allowed_tools.clone())?;
    t.set("model", command.front.model.clone())?;
    t.set("prompt", prompt)?;
    Ok(Some(t))
}

/// `expand_command(text, args)`: `text` with `$ARGUMENTS` and `$1`…`$9`
/// filled (arguments appended when it names none), as a command file's
/// body is.
fn expand(_: &Lua, (text, args): (Value, Value)) -> mlua::Result<String> {
    let text = string_arg("expand_command", "text", text)?;
    let args = match args {
        Value::Nil => String::new(),
        other => string_arg("expand_command", "args", other)?,
    };
    Ok(commands::expand(&text, &args))
}
