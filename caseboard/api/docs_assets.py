"""``/docs`` and ``/redoc`` that work offline: Swagger UI and ReDoc from an installed package, never a CDN.

FastAPI's own pages load their scripts and styles from a CDN, so on a machine without internet access
``/docs`` is a blank page. The assets come from the ``fastapi-offline`` distribution (a pinned dependency
that ships Swagger UI 5 and ReDoc as static files); only its files are used, served under ``/docs/assets``,
and the pages are FastAPI's ``get_swagger_ui_html`` / ``get_redoc_html`` pointing at them.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.routing import BaseRoute, Route

ASSETS_URL = "/docs/assets"
ASSET_FILES = ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js", "favicon.png")


def assets_folder() -> Path:
    """Where the installed package keeps the files (checked, so that a broken install fails at start)."""
    folder = Path(str(resources.files("fastapi_offline").joinpath("static")))
    missing = [name for name in ASSET_FILES if not (folder / name).is_file()]
    if missing:
        raise RuntimeError(f"the fastapi-offline package lacks {', '.join(missing)} in {folder}: reinstall it")
    return folder


def serve_docs_offline(api: FastAPI) -> None:
    """Replace the CDN-backed ``/docs``, its OAuth2 redirect and ``/redoc`` with pages whose assets this
    server serves itself."""
    docs_url, redoc_url = api.docs_url or "/docs", api.redoc_url or "/redoc"
    redirect_url = api.swagger_ui_oauth2_redirect_url or "/docs/oauth2-redirect"
    replaced = {docs_url, redoc_url, redirect_url}
    api.router.routes[:] = [r for r in api.router.routes if not _serves(r, replaced)]
    api.docs_url, api.redoc_url = docs_url, redoc_url
    api.mount(ASSETS_URL, StaticFiles(directory=assets_folder()), name="docs-assets")
    openapi_url = api.openapi_url or "/openapi.json"

    @api.get(docs_url, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{api.title} - Swagger UI",
            oauth2_redirect_url=f"{root}{redirect_url}",
            swagger_js_url=f"{root}{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS_URL}/favicon.png",
            swagger_ui_parameters=api.swagger_ui_parameters,
        )

    @api.get(redirect_url, include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @api.get(redoc_url, include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{api.title} - ReDoc",
            redoc_js_url=f"{root}{ASSETS_URL}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS_URL}/favicon.png",
            with_google_fonts=False,
        )


def _serves(route: BaseRoute, paths: set[str]) -> bool:
    return isinstance(route, Route) and route.path in paths
