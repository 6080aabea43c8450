"""The frozen, typed definition of an eval case, which every accepted file shape normalises to.

These are test *definitions*, not pytest items: Tier 3 builds one item per case × arm × agent ×
attempt from them, and the ``evals`` check reports what could not be built. Everything here is
immutable so a case can be shared by all its items and workers without copies drifting apart.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from pytest_skilleval.results import Finding, Severity

_FROZEN = ConfigDict(frozen=True, extra="forbid")

#: Placeholders a script may use; the trial runner substitutes them per trial (see Script.render).
PLACEHOLDERS = ("{skill_dir}", "{skill_name}", "{workspace}", "{home}")


class Label(str, enum.Enum):
    """Should the agent load the evaluated skill for this case?"""

    POSITIVE = "positive"
    NEGATIVE = "negative"  # a negative control: loading the skill is a mistake
    UNLABELLED = "unlabelled"  # the file names another skill and the case does not say


# -- assertions ------------------------------------------------------------------------------------
class _Assertion(BaseModel):
    model_config = _FROZEN
    #: What the grader looks at: answer | workspace | command | trajectory | usage | judge.
    target: ClassVar[str] = "answer"
    #: The author's description, shown when the assertion fails (and to the judge).
    text: str = ""
    name: str | None = None
    #: Line in the eval file; excluded from dumps so moving a case does not change the digest.
    line: int | None = Field(default=None, exclude=True)


class Judge(_Assertion):
    """A free-text behaviour, graded by the judge model (the anchor's only kind)."""

    target: ClassVar[str] = "judge"
    type: Literal["judge"] = "judge"


class Contains(_Assertion):
    type: Literal["contains"] = "contains"
    value: str
    ignore_case: bool = False


class NotContains(_Assertion):
    type: Literal["not_contains"] = "not_contains"
    value: str
    ignore_case: bool = False


class Regex(_Assertion):
    """``re.search`` on the final answer; the pattern compiled at load time."""

    type: Literal["regex"] = "regex"
    pattern: str
    ignore_case: bool = False


class NotRegex(_Assertion):
    type: Literal["not_regex"] = "not_regex"
    pattern: str
    ignore_case: bool = False


class JsonPath(_Assertion):
    """The answer (or its first JSON block) parsed as JSON; a dotted path compared to ``expected``."""

    type: Literal["json_path"] = "json_path"
    path: str
    op: Literal["equals", "contains", "truthy"] = "equals"
    expected: Any = None


class FileExists(_Assertion):
    target: ClassVar[str] = "workspace"
    type: Literal["file_exists"] = "file_exists"
    path: str  # relative to the trial's workspace


class FileContains(_Assertion):
    """The workspace file holds ``value`` (substring) or matches ``pattern`` (regex); exactly one."""

    target: ClassVar[str] = "workspace"
    type: Literal["file_contains"] = "file_contains"
    path: str
    value: str | None = None
    pattern: str | None = None


class Command(_Assertion):
    """A shell check run in the sandbox after the agent; passes on ``exit_code``."""

    target: ClassVar[str] = "command"
    type: Literal["command"] = "command"
    run: str
    exit_code: int = 0
    json_output: bool = False  # also require stdout to be JSON (the corpus's ``json_command:``)


class TrajectoryContains(_Assertion):
    """Some tool call's input (command, path, arguments) contains ``value``."""

    target: ClassVar[str] = "trajectory"
    type: Literal["trajectory_contains"] = "trajectory_contains"
    value: str


class TrajectoryNotContains(_Assertion):
    """No tool call's input contains ``value``: a negative case's "did not run scripts/bump.py"."""

    target: ClassVar[str] = "trajectory"
    type: Literal["trajectory_not_contains"] = "trajectory_not_contains"
    value: str


class SkillInvoked(_Assertion):
    target: ClassVar[str] = "trajectory"
    type: Literal["skill_invoked"] = "skill_invoked"
    skill: str  # filled with the evaluated skill's name when the file leaves it out


class SkillNotInvoked(_Assertion):
    target: ClassVar[str] = "trajectory"
    type: Literal["skill_not_invoked"] = "skill_not_invoked"
    skill: str


class MaxTurns(_Assertion):
    target: ClassVar[str] = "usage"
    type: Literal["max_turns"] = "max_turns"
    value: int = Field(ge=0)


class MaxTokens(_Assertion):
    target: ClassVar[str] = "usage"
    type: Literal["max_tokens"] = "max_tokens"
    value: int = Field(ge=0)


class MaxCost(_Assertion):
    target: ClassVar[str] = "usage"
    type: Literal["max_cost"] = "max_cost"
    value: float = Field(ge=0, description="US dollars")


Assertion = Annotated[
    Judge | Contains | NotContains | Regex | NotRegex | JsonPath | FileExists | FileContains | Command
    | TrajectoryContains | TrajectoryNotContains | SkillInvoked | SkillNotInvoked | MaxTurns | MaxTokens | MaxCost,
    Field(discriminator="type"),
]


# -- scripted turns --------------------------------------------------------------------------------
# The same schema as the gateway's scripted mode (``pytest_skilleval.gateway.script``), so a case's
# script is handed to the gateway as is after placeholders are filled; a test keeps them in step.
class ScriptCall(BaseModel):
    model_config = _FROZEN
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class ScriptUsage(BaseModel):
    model_config = _FROZEN
    input: int = Field(default=1234, ge=0)
    output: int = Field(default=56, ge=0)


class ScriptStep(BaseModel):
    """One model turn: text, then zero or more tool calls. No tool call = the final answer."""

    model_config = _FROZEN
    text: str = ""
    tool: str | None = None  # shorthand for one call
    args: dict[str, Any] = Field(default_factory=dict)
    tool_calls: tuple[ScriptCall, ...] = ()
    usage: ScriptUsage | None = None

    def calls(self) -> tuple[ScriptCall, ...]:
        single = (ScriptCall(name=self.tool, args=self.args),) if self.tool else ()
        return single + self.tool_calls


class ScriptVariant(BaseModel):
    """Steps used when the request text holds a marker, e.g. the skill's catalog entry, so a
    scripted model loads the skill only in the arm where it is offered."""

    model_config = _FROZEN
    if_request_contains: str
    steps: tuple[ScriptStep, ...]


class Script(BaseModel):
    """The turns the gateway serves one agent CLI; the last step of each list is the final answer."""

    model_config = _FROZEN
    steps: tuple[ScriptStep, ...]
    #: Answer to side calls (titles, summaries) that do not declare the scripted tool.
    side_text: str = "ok"
    #: Reply to JSON-mode side calls (Gemini CLI's routing); None keeps the gateway's default.
    json_reply: Any = None
    variants: tuple[ScriptVariant, ...] = ()
    usage: ScriptUsage | None = None
    model: str | None = None

    def render(self, values: Mapping[str, str]) -> dict[str, Any]:
        """The gateway's script data, with ``{skill_dir}`` etc. replaced in every string.

        ``values`` maps placeholder names (without braces) to their text; only the names in
        :data:`PLACEHOLDERS` are replaced, so other braces (shell, JSON) pass through untouched.
        """
        known = {name: text for name, text in values.items() if "{" + name + "}" in PLACEHOLDERS}

        def sub(value: Any) -> Any:
            if isinstance(value, str):
                for name, text in known.items():
                    value = value.replace("{" + name + "}", text)
                return value
            if isinstance(value, dict):
                return {k: sub(v) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [sub(v) for v in value]
            return value

        return sub(self.model_dump(mode="json", exclude_none=True, exclude_unset=True) | {"side_text": self.side_text})  # type: ignore[no-any-return]


# -- the case ----------------------------------------------------------------------------------------
class SourceRef(BaseModel):
    model_config = _FROZEN
    file: str  # posix, relative to the skill root
    line: int | None = None
    index: int = 0  # position of the case in its file, 0-based


class EvalCase(BaseModel):
    """One eval case, normalised from any accepted shape (see docs/eval-cases.md)."""

    model_config = _FROZEN
    id: str
    prompt: str
    expected_output: str | None = None
    assertions: tuple[Assertion, ...] = ()
    skill: str  # the evaluated skill's name
    expected_skill: str | None = None
    should_trigger: bool | None = None  # as written; ``label`` is the resolved routing
    label: Label = Label.POSITIVE
    acceptable_skills: tuple[str, ...] = ()
    #: Skill-root-relative paths to stage; None = not given (stage all of ``evals/files/``), () = none.
    files: tuple[str, ...] | None = None
    expected_script: str | None = None
    #: agent name -> script; ``*`` applies to agents without their own.
    scripts: dict[str, Script] = Field(default_factory=dict)
    #: What a deployment-scenario file says its cases need (env, resources, platforms).
    environment: dict[str, Any] = Field(default_factory=dict)
    #: Keys kept as written that the plugin does not interpret (expected_workflow, name, ...).
    extra: dict[str, Any] = Field(default_factory=dict)
    shape: str
    source: SourceRef

    @property
    def negative(self) -> bool:
        return self.label is Label.NEGATIVE

    def script_for(self, agent: str) -> Script | None:
        return self.scripts.get(agent) or self.scripts.get("*")

    def typed_assertions(self) -> tuple[Assertion, ...]:
        return tuple(a for a in self.assertions if a.target != "judge")

    def judge_assertions(self) -> tuple[Judge, ...]:
        return tuple(a for a in self.assertions if isinstance(a, Judge))

    def digest_view(self) -> dict[str, Any]:
        """What the dataset digest covers: everything but where the case sits in its file."""
        return self.model_dump(mode="json", exclude={"source"})


# -- problems --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Problem:
    """Something wrong with an eval file or case, located by file, line, case and field."""

    rule: str
    severity: Severity
    message: str
    file: str
    line: int | None = None
    case: str | None = None
    field: str | None = None
    suggestion: str | None = None

    def finding(self) -> Finding:
        where = ", ".join(part for part in (f"case {self.case!r}" if self.case else "",
                                            f"field {self.field!r}" if self.field else "") if part)
        message = f"{where}: {self.message}" if where else self.message
        return Finding(rule=f"evals.{self.rule}", severity=self.severity, file=self.file, line=self.line,
                       message=message, suggestion=self.suggestion)
