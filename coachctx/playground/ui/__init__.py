"""The playground page (Streamlit): `app.py` calls `page.main()`."""
