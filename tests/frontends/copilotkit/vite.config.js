// The page is built (never served by Vite): tests/frontends/conftest.py serves dist/ on loopback.
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

export default defineConfig({ plugins: [react()], base: "./", logLevel: "warn", build: { outDir: "dist", emptyOutDir: true, chunkSizeWarningLimit: 20000 } });
