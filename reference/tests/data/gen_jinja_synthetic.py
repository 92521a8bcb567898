#!/usr/bin/env python3
"""Adversarial templates for the Jinja engine (reference/tokenizer/jinja.h), rendered by jinja2
exactly as gen_chat_jinja.py renders chat templates (Hugging Face's environment:
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True), loopcontrols,
raise_exception; context messages, add_generation_prompt, bos_token, eos_token). Each case
records jinja2's output, or "error" when jinja2 raises (the engine must refuse those too).
test_chat_template "[jinja-synthetic]" compares byte for byte.

    pip install jinja2==3.1.6
    python3 reference/tests/data/gen_jinja_synthetic.py > reference/tests/data/jinja_synthetic_expected.json
"""
import json
import sys

import jinja2
from jinja2.exceptions import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Refused(Exception):
    pass


def raise_exception(message):
    raise Refused(message)


CONTEXTS = [
    {"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": True},
    {"messages": [{"role": "system", "content": "  Be brief.\n"}, {"role": "user", "content": "\nWhat?  "},
                  {"role": "assistant", "content": " It. "}, {"role": "user", "content": "Ünï ✓ 日本"}],
     "add_generation_prompt": False},
    {"messages": [{"role": "user", "content": ""}, {"role": "assistant", "content": "a\tb\n"}],
     "add_generation_prompt": True},
]

T = {}
# ---- whitespace control, trim_blocks, lstrip_blocks, comments, newlines ----
T["ws_trim_blocks"] = "{% if true %}\nA\n{% endif %}\nB\n"
T["ws_lstrip_blocks"] = "  {% if true %}\n  x\n  {% endif %}\n\t {% for m in messages %}\n[{{ m.role }}]\n    {% endfor %}\nend"
T["ws_lstrip_not_vars"] = "  {{ 'v' }}\n  {% if true %}y{% endif %}"
T["ws_plus_keeps"] = "a\n  {%+ if true %}b  {% endif +%}\nc"
T["ws_minus_both"] = "a  \n\n  {%- if true -%}  \n\n b \n {%- endif -%} \n c"
T["ws_var_minus"] = "x \n {{- 'y' -}} \n z {{ 'w' -}}\n\n!"
T["ws_comment"] = "a\n  {# note #}\nb {#- tight -#}  c\n{# eat newline #}\nd"
T["ws_crlf"] = "line1\r\n{% if true %}\r\nline2\r\n{% endif %}\rline3\r\n"
T["ws_trailing_newlines"] = "x\n\n"
T["ws_mid_line_block"] = "a {% if true %}b{% endif %} c\n  d {% if false %}e{% endif %}\n"
T["ws_start_of_template"] = "   {% if true %}x{% endif %}"
T["ws_tabs_after"] = "{% for i in range(2) %}\t\n{{ i }}\n{% endfor %}"
T["ws_unicode_space"] = "a\u00a0\u3000{%- if true %}b{% endif %}"
T["ws_control_space"] = ("a\x1f\x1c\x85 {%- if true %}b{% endif %}|{{ '\x1c x \x1f\u2028'|trim }}|"
                        "{{ '\x1dy\x1e'.strip() }}|{{ 'p\x1fq'.split()|join('+') }}")
T["ws_minus_after_text_in_loop"] = "{% for m in messages -%}\n   {{ m.content }}   \n{%- endfor %}|"
# ---- loops ----
T["loop_vars"] = ("{% for m in messages %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/"
                  "{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }};{% endfor %}")
T["loop_prev_next"] = ("{% for m in messages %}[{{ loop.previtem.role if loop.previtem is defined else '-' }}"
                       ">{{ loop.nextitem.role if loop.nextitem is defined else '-' }}]{% endfor %}")
T["loop_filter"] = "{% for m in messages if m.role != 'system' %}{{ loop.index }}{{ m.role }}{{ loop.last }} {% endfor %}"
T["loop_else"] = "{% for m in messages if m.role == 'tool' %}x{% else %}none{% endfor %}"
T["loop_nested"] = ("{% for a in range(3) %}{% for b in range(a) %}{{ a }}{{ b }}{{ loop.index }}"
                    "{% if loop.last %}|{% endif %}{% endfor %}{{ loop.index }};{% endfor %}")
T["loop_break_continue"] = ("{% for i in range(10) %}{% if i % 2 == 0 %}{% continue %}{% endif %}"
                            "{% if i > 6 %}{% break %}{% endif %}{{ i }}{% endfor %}")
T["loop_scope"] = ("{% set x = 'outer' %}{% for m in messages %}{{ x }}{% set x = m.role %}{{ x }},{% endfor %}"
                   "{{ x }}")
T["loop_namespace"] = ("{% set ns = namespace(n=0, s='') %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
                       "{% set ns.s = ns.s ~ m.role[0] %}{% endfor %}{{ ns.n }}{{ ns.s }}")
T["loop_dict_items"] = "{% for k, v in {'a': 1, 'b': [2]}.items() %}{{ k }}={{ v|length if v is sequence else v }};{% endfor %}"
T["loop_dict_keys"] = "{% for k in {'z': 1, 'a': 2} %}{{ k }}{% endfor %}"
T["loop_string"] = "{% for c in 'héllo' %}{{ c }}.{% endfor %}"
T["loop_undefined"] = "{% for x in nothing %}x{% else %}empty{% endfor %}"
T["loop_range_step"] = "{% for i in range(10, 0, -3) %}{{ i }} {% endfor %}{{ range(5)|length }}"
T["loop_over_slice"] = "{% for m in messages[1:] %}{{ m.role }}{% endfor %}|{% for m in messages[::-1] %}{{ m.role }}{% endfor %}"
# ---- conditionals, set ----
T["if_elif_else"] = ("{% for m in messages %}{% if m.role == 'user' %}U{% elif m.role == 'assistant' %}A"
                     "{% elif m.role == 'system' %}S{% else %}?{% endif %}{% endfor %}")
T["set_in_if"] = "{% if true %}{% set y = 5 %}{% endif %}{{ y }}"
T["set_block"] = ("{% set sys %}\n  {%- for m in messages if m.role == 'system' %}[{{ m.content|trim }}]{% endfor %}\n{% endset %}"
                 "{{ sys|length }}:{{ sys }}|{% for m in messages %}{% set inner %}{{ m.role }}!{% endset %}{{ inner }}{% endfor %}"
                 "{{ inner is defined }}")
T["set_unpack"] = "{% set a, b = [1, 'two'] %}{{ b }}{{ a }}"
T["ternary_no_else"] = "[{{ 'yes' if false }}][{{ 'yes' if true }}][{{ 'a' if false else 'b' if true else 'c' }}]"
T["not_in"] = "{{ 'x' not in 'abc' }}{{ not 'a' in 'abc' }}{{ 'user' in messages|map(attribute='role')|list }}"
# ---- undefined ----
T["undef_print"] = "[{{ nothing }}][{{ messages[10] }}][{{ messages[0].nope }}][{{ messages[0]['nope'] }}]"
T["undef_concat"] = "{{ nothing ~ 'x' }}{{ nothing|default('d') }}{{ ''|default('e') }}{{ ''|default('f', true) }}"
T["undef_tests"] = "{{ nothing is defined }}{{ nothing is undefined }}{{ none is none }}{{ nothing is none }}"
T["undef_attr_error"] = "{{ nothing.attr }}"
T["undef_add_error"] = "{{ nothing + 'a' }}"
T["undef_length"] = "{{ nothing|length }}{{ nothing|trim }}|{{ nothing == nothing }}{{ nothing|list|length }}"
T["undef_truthy"] = "{% if nothing %}t{% else %}f{% endif %}{% if not nothing %}!{% endif %}"
# ---- literals, numbers, operators ----
T["num_print"] = ("{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1/3 }} {{ 10/2 }} {{ 1e16 }} {{ 1e15 }} {{ 1.5e-5 }} {{ 0.0001 }} "
                  "{{ -0.0 }} {{ 2.5e300 * 10 }} {{ 123456789012345678 }}")
T["num_ops"] = "{{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 3 - 5 }} {{ 2 * 3.5 }} {{ -(3) }} {{ +4 }}"
T["num_bool"] = "{{ true + 1 }} {{ true == 1 }} {{ 1 == 1.0 }} {{ false }} {{ none }} {{ True }}"
T["num_compare"] = "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }} {{ 'é' > 'z' }} {{ 2 >= 2.0 }} {{ [1, 2] < [1, 3] }}"
T["str_repeat"] = "{{ '-' * 3 }}{{ 2 * 'ab' }}{{ 'x' * 0 }}|{{ ([1] * 3)|length }}"
T["str_escapes"] = r"""{{ 'a\nb' }}|{{ "t\tt" }}|{{ '\x41\u00e9\101' }}|{{ 'back\\slash' }}|{{ 'keep\d' }}|{{ 'q\'q' }}|{{ "a" 'b' "c" }}"""
T["str_index_slice"] = "{{ 'héllo'[1] }}{{ 'héllo'[-1] }}{{ 'héllo'[1:3] }}{{ 'héllo'[::-1] }}{{ 'héllo'[::2] }}{{ 'abc'[5:] }}|{{ 'héllo'|length }}"
T["str_methods"] = ("{{ '  x y  '.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ '  a'.lstrip() }}|{{ 'b  '.rstrip() }}|"
                    "{{ 'a,b,,c'.split(',')|join('/') }}|{{ ' a  b '.split()|join('+') }}|{{ 'a b c'.split(' ', 1)|last }}|"
                    "{{ 'hello'.replace('l', 'L') }}|{{ 'hello'.replace('l', 'L', 1) }}|{{ 'abc'.startswith(('x', 'a')) }}|"
                    "{{ 'abc'.endswith('bc') }}|{{ 'MiXed'.upper() }}{{ 'MiXed'.lower() }}|{{ 'hello world'.title() }}|"
                    "{{ 'hELLO'.capitalize() }}|{{ '-'.join(['a', 'b']) }}")
T["str_split_print"] = "{% for p in 'a,b,,c'.split(',') %}[{{ p }}]{% endfor %}"
T["filters_basic"] = ("{{ '  t  '|trim }}|{{ 'xxtxx'|trim('x') }}|{{ messages|length }}|{{ 'ab'|count }}|{{ 'abc'|upper }}|"
                      "{{ 'ABC'|lower }}|{{ ['a', 'b', 'c']|join(', ') }}|{{ [1, 2]|join }}")
T["error_unknown_filter"] = "{{ messages|first|attr_missing_ok }}"
T["filters_seq"] = ("{{ (messages|last).role }}|{{ 'abc'|first }}{{ 'abc'|last }}|"
                    "{{ 'abc'|list|length }}|{{ []|first is defined }}|{{ 42|string ~ '!' }}|{{ -3|abs }}|{{ '12'|int + 1 }}|"
                    "{{ 3.9|int }}|{{ 'hello world'|title }}|{{ 'hi'|capitalize }}|{{ 'a-b'|replace('-', '+') }}")
T["filters_select"] = ("{{ messages|selectattr('role', 'equalto', 'user')|list|length }}|"
                       "{{ messages|rejectattr('role', 'equalto', 'user')|map(attribute='role')|join(',') }}|"
                       "{{ messages|selectattr('content')|list|length }}|{{ [1, 0, 2]|select|list|length }}|"
                       "{{ [1, 2, 3, 4]|reject('odd')|join }}|{{ messages|map(attribute='content')|map(attribute='x')|list|length }}")
T["filters_select_falsy"] = ("{{ none|selectattr('type', 'equalto', 'x')|list|length }}{{ nothing|rejectattr('a')|list|length }}"
                             "{{ none|map(attribute='x')|list|length }}{{ ''|select|list|length }}")
T["filter_precedence"] = "{{ 'a' + ' b '|trim + 'c' }}{{ -1|abs }}{{ messages|length * 2 }}"
T["tests_misc"] = ("{{ 1 is integer }}{{ 1.0 is float }}{{ 'a' is string }}{{ {} is mapping }}{{ [] is sequence }}"
                   "{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}{{ 'ab' is lower }}"
                   "{{ 'AB' is upper }}{{ 1 is number }}{{ true is boolean }}{{ 2 is eq 2 }}{{ 1 is in [1] }}"
                   "{{ 1 is lt 2 }}{{ 'x' is not none }}{{ true is true }}{{ 0 is false }}{{ messages is iterable }}")
T["dict_ops"] = ("{% set d = {'a': 1, 'b': 'x'} %}{{ d.a }}{{ d['b'] }}{{ d.get('c', 'dflt') }}{{ d.get('a') }}"
                 "{{ 'a' in d }}{{ d|length }}{{ d.keys()|list|length }}{{ d.values()|list|last }}{{ {'a': 1, 'b': 'x'} == d }}")
T["msg_equality"] = "{% for m in messages %}{{ m == messages[-1] }}{{ m is sameas m }}{% endfor %}"
T["and_or_values"] = "{{ '' or 'b' }}|{{ 'a' and 'b' }}|{{ 0 or none }}|{{ ([] and 'x')|length }}|{{ messages and 'm' }}"
T["raise"] = "{% if messages|length > 1 %}{{ raise_exception('too many: ' ~ messages|length) }}{% endif %}ok"
T["error_type_add"] = "{{ 1 + 'a' }}"
T["error_none_concat"] = "{{ none + 'a' }}"
T["error_div_zero"] = "{{ 1 // 0 }}"
T["error_len_int"] = "{{ 5|length }}"
T["error_iter_int"] = "{% for x in 5 %}{% endfor %}"
T["error_call_undefined"] = "{{ nothing() }}"
T["error_ns_attr"] = "{% set d = {} %}{% set d.x = 1 %}"
T["bos_eos"] = "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}>>{% endif %}"
T["chat_llama3_like"] = ("{{- bos_token }}\n{%- for message in messages %}\n    {{- '<|start_header_id|>' + message['role'] + "
                         "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}\n{%- endfor %}\n"
                         "{%- if add_generation_prompt %}\n    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}\n"
                         "{%- endif %}\n")


def main():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.globals["raise_exception"] = raise_exception
    env.filters["attr_missing_ok"] = lambda v: "ok"  # only used to prove unknown filters are refused
    out = []
    for name, source in T.items():
        cases = []
        for ctx in CONTEXTS:
            kwargs = dict(ctx, bos_token="<s>", eos_token="</s>")
            try:
                if "attr_missing_ok" in source:
                    raise TemplateError("no filter named 'attr_missing_ok'")  # what stock jinja2 says
                text = env.from_string(source).render(**kwargs)
                cases.append(dict(kwargs, expected=text))
            except (Refused, TemplateError, TypeError, ZeroDivisionError, ValueError):
                cases.append(dict(kwargs, error=True))
        out.append({"name": name, "template": source, "cases": cases})
    json.dump({"source": "jinja2 %s ImmutableSandboxedEnvironment(trim_blocks, lstrip_blocks), loopcontrols"
               % jinja2.__version__, "templates": out}, sys.stdout, ensure_ascii=False, indent=1)
    print()


if __name__ == "__main__":
    main()
